/**
 * English function words dropped before stemming. Lower-case, unstemmed. Question words are included:
 * a query like "when did she move" should rank on "move", not on "when".
 */
export const ENGLISH_STOPWORDS: ReadonlySet<string> = new Set(
  `a about above after again against all am an and any are aren as at be because been before being below
  between both but by can cannot could couldn did didn do does doesn doing don down during each few for from
  further had hadn has hasn have haven having he her here hers herself him himself his how i if in into is
  isn it its itself just let ll me more most mustn my myself no nor not now of off on once only or other
  ought our ours ourselves out over own re same shan she should shouldn so some such than that the their
  theirs them themselves then there these they this those through to too under until up ve very was wasn
  we were weren what when where which while who whom why will with won would wouldn you your yours
  yourself yourselves also s t d m o y`.split(/\s+/),
);

/** Common Chinese particles, pronouns and fillers that carry no topic. */
export const CHINESE_STOPWORDS: ReadonlySet<string> = new Set(
  `的 了 在 是 我 有 和 就 不 人 都 一 一个 上 也 很 到 说 要 去 你 会 着 没有 看 好 自己 这 他 她 它 们 那 吗 吧 呢 啊 呀 哦 嗯
  我们 你们 他们 她们 这个 那个 什么 怎么 为什么 哪 哪里 哪个 谁 与 及 或 而 被 把 让 给 对 从 向 之 其 以 于 为 等 还 又 再 才 已经 得 地`.split(/\s+/),
);
