"use strict";

const assert = require("assert");
const knowledge = require("../resources/knowledge/knowledge");

const ANSWER = {
    available: true, refreshInterval: 30, refreshedAt: 1000, lastError: null, languages: ["en-US", "de"],
    stores: { docs: { sources: 3, chunks: 60, languages: ["de", "en-US"], indexedAt: 990 },
        workspace: { sources: 4, chunks: 12, languages: [""], indexedAt: 995 } },
    sources: [
        { store: "docs", language: "en-US", source: "node-red", chunks: 40, indexedAt: 990, module: "node-red",
            version: "4.1.0" },
        { store: "docs", language: "de", source: "node-red", chunks: 15, indexedAt: 980, module: "node-red",
            version: "4.1.0" },
        { store: "docs", language: "en-US", source: "node-red-contrib-ai-sidebar", chunks: 5, indexedAt: 970,
            module: "node-red-contrib-ai-sidebar", version: "0.9.0" },
        { store: "workspace", language: "", source: "tab:t2", chunks: 4, indexedAt: 995 },
        { store: "workspace", language: "", source: "configs", chunks: 2, indexedAt: 995 },
        { store: "workspace", language: "", source: "subflow:s1", chunks: 3, indexedAt: 995 },
        { store: "workspace", language: "", source: "summary", chunks: 3, indexedAt: 995 }
    ]
};

describe("the knowledge panel's view of the index", function () {
    it("groups the sources per store with counts and freshness, the summary first in the workspace", function () {
        const view = knowledge.knowledgeView(ANSWER);
        assert.strictEqual(view.available, true);
        assert.strictEqual(view.refreshedAt, 1000);
        assert.strictEqual(view.refreshInterval, 30);
        const [docs, workspace] = view.stores;
        assert.deepStrictEqual([docs.store, docs.sources, docs.chunks, docs.languages, docs.indexedAt],
            ["docs", 3, 60, ["de", "en-US"], 990]);
        assert.deepStrictEqual(docs.entries.map((e) => [e.name, e.version, e.language, e.chunks]), [
            ["node-red", "4.1.0", "de", 15], ["node-red", "4.1.0", "en-US", 40],
            ["node-red-contrib-ai-sidebar", "0.9.0", "en-US", 5]]);
        assert.deepStrictEqual(workspace.entries.map((e) => [e.kind, e.id, e.chunks]), [
            ["summary", null, 3], ["tab", "t2", 4], ["subflow", "s1", 3], ["configs", null, 2]]);
        assert.deepStrictEqual([workspace.sources, workspace.chunks], [4, 12]);
    });

    it("says when the service keeps no index, and reads an empty or missing answer as nothing indexed", function () {
        assert.strictEqual(knowledge.knowledgeView({ available: false, stores: {}, sources: [] }).available, false);
        const empty = knowledge.knowledgeView(null);
        assert.strictEqual(empty.refreshedAt, null);
        assert.deepStrictEqual(empty.stores.map((s) => [s.store, s.sources, s.indexedAt]),
            [["docs", 0, null], ["workspace", 0, null]]);
        assert.strictEqual(knowledge.knowledgeView({ lastError: "Node-RED did not answer", sources: [] }).lastError,
            "Node-RED did not answer");
    });

    it("says how long ago something was indexed in the editor's language", function () {
        const now = 1000000 * 1000;
        assert.strictEqual(knowledge.formatAge(1000000 - 5, now, "en-US"), "5 seconds ago");
        assert.strictEqual(knowledge.formatAge(1000000 - 130, now, "en-US"), "2 minutes ago");
        assert.strictEqual(knowledge.formatAge(1000000 - 7300, now, "de"), "vor 2 Stunden");
        assert.strictEqual(knowledge.formatAge(1000000 - 86400 * 3, now, "en-US"), "3 days ago");
        assert.strictEqual(knowledge.formatAge(1000000, now, "en-US"), "now");
    });

    it("counts what a reindex read again and removed over every store and language", function () {
        assert.deepStrictEqual(knowledge.reindexCounts({ reports: [
            { store: "docs", language: "en-US", reindexed: ["node-red"], removed: ["old-module"], unchanged: 3 },
            { store: "workspace", language: "", reindexed: ["tab:t1", "summary"], removed: [], unchanged: 2 }
        ] }), { changed: 3, removed: 1 });
        assert.deepStrictEqual(knowledge.reindexCounts({}), { changed: 0, removed: 0 });
    });
});
