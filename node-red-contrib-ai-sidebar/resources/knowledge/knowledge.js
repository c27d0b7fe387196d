/**
 * The knowledge index as the sidebar's Knowledge panel shows it, from the service's `GET ai-sidebar/knowledge`
 * (`{available, refreshInterval, refreshedAt, lastError, languages, stores, sources[{store, language, source,
 * chunks, indexedAt, module?, version?}]}`, times in Unix seconds) and `POST ai-sidebar/knowledge/reindex`
 * (the same plus `reports[{store, language, reindexed[], removed[], unchanged}]`).
 *
 * Docs sources are node modules (one per language the help is kept in); workspace sources are `tab:<id>`,
 * `subflow:<id>`, `configs` and `summary` (service/knowledge/workspace.py).
 *
 * Loaded in the editor as a plain script (registers `NodeRedAiSidebar.knowledge`) and in Node.js by the
 * package's tests (`require`). Nothing here touches the DOM; knowledge-panel.js shows it.
 */
(function (root, factory) {
    "use strict";
    if (typeof module === "object" && module.exports) {
        module.exports = factory();
    } else {
        root.NodeRedAiSidebar = root.NodeRedAiSidebar || {};
        root.NodeRedAiSidebar.knowledge = factory();
    }
}(typeof self !== "undefined" ? self : this, function () {
    "use strict";

    const STORES = ["docs", "workspace"];
    // Workspace sources first in this order (the summary answers "how many" questions, so it leads).
    const WORKSPACE_ORDER = { summary: 0, tab: 1, subflow: 2, configs: 3, other: 4 };

    function number(value) {
        return typeof value === "number" && isFinite(value) && value >= 0 ? value : 0;
    }

    function time(value) {
        return typeof value === "number" && isFinite(value) && value > 0 ? value : null;
    }

    /** `{kind, id}` of a workspace source name: `tab:<id>` → tab, `subflow:<id>`, `configs`, `summary`. */
    function workspaceKind(source) {
        const match = /^(tab|subflow):(.+)$/.exec(source);
        if (match) {
            return { kind: match[1], id: match[2] };
        }
        return { kind: source === "configs" || source === "summary" ? source : "other", id: null };
    }

    /**
     * What the panel shows of a GET knowledge (or reindex) answer.
     *
     * @param {object} body the service's answer
     * @returns {{available: boolean, refreshedAt: ?number, refreshInterval: ?number, lastError: ?string,
     *     stores: {store: string, sources: number, chunks: number, languages: string[], indexedAt: ?number,
     *     entries: {kind: string, id: ?string, name: string, version: ?string, language: string, chunks: number,
     *     indexedAt: ?number}[]}[]}} both stores always, docs first; docs entries by module then language,
     *     workspace entries summary, tabs, subflows, configs
     */
    function knowledgeView(body) {
        body = body && typeof body === "object" ? body : {};
        const sources = Array.isArray(body.sources) ? body.sources : [];
        const stores = STORES.map(function (store) {
            const entries = sources.filter(function (source) {
                return source && source.store === store && typeof source.source === "string";
            }).map(function (source) {
                const kind = store === "docs" ? { kind: "module", id: null } : workspaceKind(source.source);
                return {
                    kind: kind.kind, id: kind.id,
                    name: store === "docs" && typeof source.module === "string" ? source.module : source.source,
                    version: typeof source.version === "string" ? source.version : null,
                    language: typeof source.language === "string" ? source.language : "",
                    chunks: number(source.chunks), indexedAt: time(source.indexedAt)
                };
            });
            entries.sort(function (a, b) {
                if (store === "workspace" && a.kind !== b.kind) {
                    return WORKSPACE_ORDER[a.kind] - WORKSPACE_ORDER[b.kind];
                }
                return a.name.localeCompare(b.name) || a.language.localeCompare(b.language);
            });
            const stats = body.stores && typeof body.stores === "object" && body.stores[store] || {};
            const languages = {};
            entries.forEach(function (entry) {
                if (entry.language) {
                    languages[entry.language] = true;
                }
            });
            return {
                store: store,
                sources: entries.length,
                chunks: entries.reduce(function (sum, entry) {
                    return sum + entry.chunks;
                }, 0),
                languages: Object.keys(languages).sort(),
                indexedAt: time(stats.indexedAt) || entries.reduce(function (newest, entry) {
                    return entry.indexedAt && (!newest || entry.indexedAt > newest) ? entry.indexedAt : newest;
                }, null),
                entries: entries
            };
        });
        return {
            available: body.available !== false,
            refreshedAt: time(body.refreshedAt),
            refreshInterval: typeof body.refreshInterval === "number" ? body.refreshInterval : null,
            lastError: typeof body.lastError === "string" && body.lastError ? body.lastError : null,
            stores: stores
        };
    }

    /**
     * How long ago `seconds` (Unix time) was, in `locale`'s words ("2 minutes ago", "yesterday"), by the
     * runtime's `Intl.RelativeTimeFormat`.
     *
     * @param {number} seconds Unix seconds
     * @param {number} nowMs now, in milliseconds (`Date.now()`)
     * @param {string} [locale] a BCP 47 tag
     * @returns {string}
     */
    function formatAge(seconds, nowMs, locale) {
        const ago = Math.max(0, Math.round(nowMs / 1000 - seconds));
        const steps = [[60, "second", 1], [3600, "minute", 60], [86400, "hour", 3600], [Infinity, "day", 86400]];
        const step = steps.filter(function (candidate) {
            return ago < candidate[0];
        })[0];
        let format;
        try {
            format = new Intl.RelativeTimeFormat(locale || undefined, { numeric: "auto" });
        } catch {
            format = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
        }
        return format.format(-Math.floor(ago / step[2]), step[1]);
    }

    /**
     * What a reindex changed: the sources indexed again and removed, over both stores and every language.
     *
     * @param {object} body the reindex answer
     * @returns {{changed: number, removed: number}}
     */
    function reindexCounts(body) {
        const reports = body && Array.isArray(body.reports) ? body.reports : [];
        return reports.reduce(function (counts, report) {
            counts.changed += report && Array.isArray(report.reindexed) ? report.reindexed.length : 0;
            counts.removed += report && Array.isArray(report.removed) ? report.removed.length : 0;
            return counts;
        }, { changed: 0, removed: 0 });
    }

    return { STORES: STORES, knowledgeView: knowledgeView, formatAge: formatAge, reindexCounts: reindexCounts,
        workspaceKind: workspaceKind };
}));
