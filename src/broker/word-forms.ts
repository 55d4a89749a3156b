// Word forms for ranking tools: "issues" should find create_issue, "commenting" add_comment. A few
// English suffix rules are enough for tool names; a full stemmer would be more than this needs.

/** The stem of one lower-case word: plural and -ing/-ed endings removed. */
export function stem(word: string): string {
  if (word.length > 4 && word.endsWith("ies")) return `${word.slice(0, -3)}y`;
  if (word.length > 4 && /(ss|x|z|ch|sh)es$/.test(word)) return word.slice(0, -2);
  if (word.length > 3 && word.endsWith("s") && !word.endsWith("ss")) return word.slice(0, -1);
  if (word.length > 5 && word.endsWith("ing")) return word.slice(0, -3);
  if (word.length > 4 && word.endsWith("ed")) return word.slice(0, -2);
  return word;
}

/** The stems of the words in `text` (split on anything but letters and digits). */
export function stems(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean)
    .map(stem);
}
