import { MEMORY_PREFIX_MIN, memoryTerms, memoryWords } from "@alma-harness/core";

/** Lowercased word tokens (letters and digits of any script), de-duplicated, in first-seen order (core's `memoryWords`: one rule for every store). */
export function tokenize(text: string): string[] {
  return [...new Set(memoryWords(text))];
}

/** A query's terms as every store ranks by them (core's `memoryTerms`: distinct, at most 32). */
export { memoryTerms as queryTerms };

/** How many of the query's distinct terms the text holds (a term matches a word it equals or, from 4 characters, a word it begins). */
export function lexicalScore(terms: readonly string[], text: string): number {
  const words = tokenize(text);
  let score = 0;
  for (const term of terms)
    if (words.some((w) => w === term || (term.length >= MEMORY_PREFIX_MIN && w.startsWith(term))))
      score++;
  return score;
}
