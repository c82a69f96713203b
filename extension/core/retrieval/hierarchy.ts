import type { Retriever, SearchHit, SearchOptions } from "./types";

/**
 * The LcRL multilingual retrieval hierarchy ("native → global → high-resource anchor"): the query's own
 * language first, then every other corpus language, then the anchor language (English by default).
 *
 * The paper (Language-Coupled RL for Multilingual RAG, "Hierarchical Multi-round Retrieval Strategy")
 * states the three stages and their purpose, but runs them as rounds of an agent's rollout and leaves
 * the following unstated; the choices made here:
 * - Rounds become tiers of one search call, so an agent that searches once still gets the priority order;
 *   a caller that wants the paper's one-tier-per-round behaviour passes `tiers: [0]`, `[1]`, `[2]` per round.
 * - Tier numbers name the role, not the position in the search order: 0 native, 1 other languages,
 *   2 anchor. Reordering the search (`order`) does not renumber them, so a trajectory always says which
 *   role a result came from.
 * - When the query language is itself an anchor (an English query), the anchor tier is empty and skipped;
 *   anchors are never part of tier 1, so no language is searched twice.
 * - The paper's stop condition is the policy deciding to search again. Here it is a setting (`stop`):
 *   stop after the first tier at which enough results have been gathered, counting results from all tiers
 *   searched so far whose score reaches `minScore`; or search every tier.
 * - Results are merged tier-first (tier order as searched, then each tier's own ranking), never by raw
 *   score: scores from different languages' sub-collections are not comparable (BM25 IDF differs per
 *   language), and the paper's point is that native evidence comes before foreign evidence.
 * - The query language is detected from the script of the query (see `detectQueryLanguage`); Latin
 *   script cannot tell English from German, so it maps to a configured default.
 */

/** The three roles of the hierarchy, as recorded in `SearchHit.tier`. */
export const TIER_NATIVE = 0;
export const TIER_OTHER_LANGUAGES = 1;
export const TIER_ANCHOR = 2;
export type TierNumber = typeof TIER_NATIVE | typeof TIER_OTHER_LANGUAGES | typeof TIER_ANCHOR;

export type StopRule =
  /** Stop after a tier once `minResults` results (default: topk) scoring at least `minScore` (default 0) are gathered. */
  | { kind: "enough"; minResults?: number; minScore?: number }
  /** Search every tier and merge tier-first. */
  | { kind: "all" };

export interface HierarchySettings {
  /**
   * Headword languages of the corpora (BCP-47 primary tags). Their order is the search order inside
   * tier 1; the query language and the anchors are removed from it there.
   */
  languages: string[];
  /** High-resource anchor language(s) searched last. Default ["en"]. */
  anchors?: string[];
  /** Language assumed for a Latin-script query when none is given. Default "en". */
  latinDefault?: string;
  /** The order tiers are searched in. Default [0, 1, 2]. */
  order?: TierNumber[];
  /** Default: enough results = topk, any score. */
  stop?: StopRule;
  /** Most results taken from one tier (default: topk), so later tiers can be represented under `all`. */
  perTier?: number;
}

export interface HierarchicalSearchOptions extends SearchOptions {
  /** The query's language; detected from its script when omitted. */
  queryLang?: string;
  /** Search only these tiers (e.g. one per agent round, as in the paper). Default: all, in `order`. */
  tiers?: TierNumber[];
}

/** What each tier did, for trajectories and the evidence panel. */
export interface TierTrace {
  tier: TierNumber;
  langs: string[];
  /** Hits the tier contributed after de-duplication and the per-tier cap. */
  found: number;
}

export interface HierarchicalResult {
  queryLang: string;
  hits: SearchHit[];
  /** Tiers in the order searched; tiers after the stop rule fired are absent. */
  searched: TierTrace[];
  /** Which rule ended the search: the stop rule, or running out of tiers. */
  stoppedBy: "enough" | "exhausted";
}

const SCRIPTS: Array<{ lang: string; pattern: RegExp }> = [
  { lang: "ja", pattern: /[\p{Script=Hiragana}\p{Script=Katakana}]/gu },
  { lang: "ko", pattern: /\p{Script=Hangul}/gu },
  { lang: "zh", pattern: /\p{Script=Han}/gu },
  { lang: "ru", pattern: /\p{Script=Cyrillic}/gu },
  { lang: "el", pattern: /\p{Script=Greek}/gu },
  { lang: "ar", pattern: /\p{Script=Arabic}/gu },
  { lang: "th", pattern: /\p{Script=Thai}/gu },
  { lang: "he", pattern: /\p{Script=Hebrew}/gu },
  { lang: "hi", pattern: /\p{Script=Devanagari}/gu },
];

/**
 * The language a query is most likely written in, from its script alone:
 * - any kana makes it Japanese (Japanese mixes kanji with kana; Chinese never uses kana);
 * - otherwise the non-Latin script with the most letters wins (Han → zh, Hangul → ko, Cyrillic → ru,
 *   Greek → el, Arabic → ar, Thai → th, Hebrew → he, Devanagari → hi), so "内卷 rat race" is Chinese:
 *   Latin words inside another script's text are usually names, acronyms or glosses;
 * - Latin script only, or no letters at all, gives `latinDefault`.
 * Cyrillic, Arabic and Devanagari are shared by several languages; callers that know better pass the
 * language explicitly.
 */
export function detectQueryLanguage(query: string, latinDefault = "en"): string {
  let best = { lang: latinDefault, count: 0 };
  for (const { lang, pattern } of SCRIPTS) {
    const count = query.match(pattern)?.length ?? 0;
    if (lang === "ja" && count > 0) return "ja";
    if (count > best.count) best = { lang, count };
  }
  return best.lang;
}

/** The languages each tier searches for a query in `queryLang`; an empty list means the tier is skipped. */
export function tierLanguages(queryLang: string, settings: HierarchySettings): Record<TierNumber, string[]> {
  const anchors = settings.anchors ?? ["en"];
  const native = [queryLang];
  const others = unique(settings.languages).filter((l) => l !== queryLang && !anchors.includes(l));
  return {
    [TIER_NATIVE]: native,
    [TIER_OTHER_LANGUAGES]: others,
    [TIER_ANCHOR]: anchors.filter((l) => l !== queryLang),
  };
}

/**
 * A Retriever that searches a base Retriever tier by tier through its `langs` option (see the module
 * comment for the rules). Every hit it returns carries `tier`.
 */
export class HierarchicalRetriever implements Retriever {
  constructor(
    private readonly base: Retriever,
    private readonly settings: HierarchySettings,
  ) {
    const order = settings.order ?? [TIER_NATIVE, TIER_OTHER_LANGUAGES, TIER_ANCHOR];
    if (new Set(order).size !== order.length || order.some((t) => ![0, 1, 2].includes(t))) {
      throw new Error(`The tier order must list distinct tiers out of 0, 1, 2; got [${order.join(", ")}]`);
    }
  }

  get corpusIds(): readonly string[] {
    return this.base.corpusIds;
  }

  async search(query: string, options: HierarchicalSearchOptions): Promise<SearchHit[]> {
    return (await this.searchTiers(query, options)).hits;
  }

  /**
   * `options.langs`, when given, narrows every tier to those languages (a tier left with none is skipped).
   */
  async searchTiers(query: string, options: HierarchicalSearchOptions): Promise<HierarchicalResult> {
    const queryLang = options.queryLang ?? detectQueryLanguage(query, this.settings.latinDefault);
    const byTier = tierLanguages(queryLang, this.settings);
    const order = (this.settings.order ?? [TIER_NATIVE, TIER_OTHER_LANGUAGES, TIER_ANCHOR]).filter(
      (t) => !options.tiers || options.tiers.includes(t),
    );
    const stop = this.settings.stop ?? { kind: "enough" };
    const perTier = Math.min(this.settings.perTier ?? options.topk, options.topk);
    const allowed = options.langs?.length ? new Set(options.langs) : null;

    const hits: SearchHit[] = [];
    const seen = new Set<string>();
    const searched: TierTrace[] = [];
    for (const tier of order) {
      const langs = byTier[tier].filter((l) => !allowed || allowed.has(l));
      if (langs.length === 0) continue;
      options.signal?.throwIfAborted();
      const found = await this.base.search(query, {
        topk: perTier,
        langs,
        signal: options.signal,
        onWarning: options.onWarning,
      });
      let taken = 0;
      for (const hit of found) {
        if (seen.has(hit.id) || taken >= perTier) continue;
        seen.add(hit.id);
        hits.push({ ...hit, tier });
        taken++;
      }
      searched.push({ tier, langs, found: taken });
      if (stop.kind === "enough") {
        const minScore = stop.minScore ?? 0;
        const good = hits.filter((h) => h.score >= minScore).length;
        if (good >= (stop.minResults ?? options.topk)) {
          return { queryLang, hits: hits.slice(0, options.topk), searched, stoppedBy: "enough" };
        }
      }
    }
    return { queryLang, hits: hits.slice(0, options.topk), searched, stoppedBy: "exhausted" };
  }
}

function unique(values: string[]): string[] {
  return [...new Set(values)];
}
