/** Lowercased word tokens (letters and digits of any script), de-duplicated, in first-seen order. */
export function tokenize(text: string): string[] {
  return [...new Set(text.toLowerCase().normalize("NFKC").match(/[\p{L}\p{N}]+/gu) ?? [])];
}

/** How many of the query's distinct terms the text holds (a term matches a word it begins). */
export function lexicalScore(terms: readonly string[], text: string): number {
  const words = tokenize(text);
  let score = 0;
  for (const term of terms) if (words.some((w) => w === term || (term.length >= 4 && w.startsWith(term)))) score++;
  return score;
}
