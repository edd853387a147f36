import type { Scored } from "./bm25.js";
import type { Ranking } from "./tool-search.js";

/**
 * Which of a ranking's eligible tools load (`chooseCovering`), and which never compete
 * (`isStray`): the near ties of the best and their leader, names that say less of the query, new
 * name words below a tie. Pure functions of the scored tools and the ranking's settings.
 */

/**
 * The tools a ranking keeps, best first: the best, every near tie of it, and below a tie only a
 * tool whose short name matches query words no chosen tool's name matched, worth `gain` of the
 * best score (a query that needs two tools names two things; a crowd sharing the best's words
 * adds nothing new, even when a description mentions the other thing).
 */
export function chooseCovering(
  eligible: readonly Scored[],
  topScore: number,
  ranking: Ranking,
  held: boolean,
): Scored[] {
  const chosen: Scored[] = [];
  let named: Uint8Array | undefined;
  for (const s of leaderFirst(eligible, ranking.tie * topScore)) {
    const lead = chosen[0];
    const tie =
      s.score >= ranking.tie * topScore &&
      !unnamedTie(s, lead, named) &&
      (held || !namesLess(s, lead));
    if (named !== undefined && !tie) {
      let fresh = 0;
      for (let t = 0; t < s.parts.length; t++)
        if (s.named[t] === 1 && named[t] === 0) fresh += s.parts[t] as number;
      if (fresh < ranking.gain * topScore) continue;
    }
    named ??= new Uint8Array(s.named.length);
    for (let t = 0; t < s.named.length; t++) if (s.named[t] === 1) named[t] = 1;
    chosen.push(s);
  }
  return chosen;
}

/**
 * A near tie that is not one: the best matched every query word (a keyword query), the tools
 * chosen so far matched some of them in their names, and this tool matches none in its name (`jira jql search`: `jira_search`, not
 * `get_board_issues`, whose description says JQL). Intent queries, which the best covers only in
 * part, keep their ties: their gold tools often match in descriptions.
 */
function unnamedTie(s: Scored, best: Scored | undefined, named: Uint8Array | undefined): boolean {
  if (best === undefined || named === undefined || best.coverage < FULL_COVERAGE) return false;
  return named.includes(1) && !s.named.includes(1);
}

/** What a tool's short name matched of the query: the share of its score its name earned. */
function nameWeight(s: Scored): number {
  let [named, all] = [0, 0];
  for (let t = 0; t < s.parts.length; t++) {
    all += s.parts[t] as number;
    if (s.named[t] === 1) named += s.parts[t] as number;
  }
  // Scaled as the score was (the query's mood may have lowered it).
  return all > 0 ? (named * s.score) / all : 0;
}

/**
 * The ranking with its leader first: among the near ties of the best whose short names say more of
 * the query than the best's (see `namesLess`), the one whose name matched the most of it
 * (`jira transition issue status`: `jira_transition_issue` leads `jira_get_transitions`, which
 * scored higher on its description). The rest keep their order.
 */
function leaderFirst(eligible: readonly Scored[], tieScore: number): readonly Scored[] {
  const top = eligible[0];
  if (top === undefined) return eligible;
  let lead = 0;
  for (let i = 1; i < eligible.length && (eligible[i] as Scored).score >= tieScore; i++) {
    const s = eligible[i] as Scored;
    if (namesLess(top, s) && nameWeight(s) > nameWeight(eligible[lead] as Scored)) lead = i;
  }
  return lead === 0
    ? eligible
    : [eligible[lead] as Scored, ...eligible.filter((_, i) => i !== lead)];
}

/**
 * A near tie whose name says less of the query than the best's name: every query word this tool's
 * short name matches (one at least), the best's does too, and the best's matches more; and this tool matches no
 * query word the best does not (`git diff staged`: `git_diff_staged`, not `git_diff_unstaged`,
 * whose description says "staged").
 */
function namesLess(s: Scored, best: Scored | undefined): boolean {
  if (best === undefined || !s.named.includes(1)) return false;
  let fewer = false;
  for (let t = 0; t < s.named.length; t++) {
    if (s.named[t] === 1 && best.named[t] === 0) return false;
    if ((s.parts[t] as number) > 0 && (best.parts[t] as number) === 0) return false;
    if (best.named[t] === 1 && s.named[t] === 0) fewer = true;
  }
  return fewer;
}

/** The coverage of a match that covers every query word (floating point aside). */
const FULL_COVERAGE = 0.999;

/**
 * A stray match: in a query of `strayTerms` terms or more, a tool that matches only one of them,
 * and only in its description (one shared word is not evidence that the query means that tool).
 */
export function isStray(s: Scored, ranking: Ranking): boolean {
  if (s.parts.length < ranking.strayTerms) return false;
  let matched = 0;
  for (let t = 0; t < s.parts.length; t++) {
    if ((s.parts[t] as number) <= 0) continue;
    if (s.named[t] === 1) return false;
    matched += 1;
  }
  return matched <= 1;
}
