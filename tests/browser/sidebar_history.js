// Drives the sidebar's History panel (issue 35) in headless Debian Chromium and reports what the user saw as one
// JSON line on stdout.
// Input (env): EDITOR_URL, USERNAME, PASSWORD, OUT_DIR, MODE, SHOT_SUFFIX (screenshot names), LANGUAGE (off: the
// editor's language), and for MODE
// "restore": TAB_ID (the tab to restore), NODE_ID (a node on it whose `topic` the editor changes and deploys, to
// TOPICS, comma-separated, one deploy each), OTHER_NODE_ID (a node on another tab renamed to OTHER_NAMES in the
// same deploys).
// "live": TAB_ID, NODE_ID, TOPIC (the `topic` deployed while the panel is open).
// Modes: live (open the panel, deploy from the editor: the new deploy appears in the open panel); restore (deploy twice from the editor, open the panel, pin the newest deploy, its changes, the panel at
// 240 px, Restore this tab, the approval card, Approve: the editor holds the old value, undeployed); off (the panel
// when the service keeps no history).
"use strict";
const editor = require("./editor");

const env = process.env;
const suffix = env.SHOT_SUFFIX || "";

/** Change `property` of node `id` as an edit dialog would (one undo step), then click Deploy and wait for it. */
async function editAndDeploy(page, edits) {
    const before = await page.evaluate(() => RED.nodes.version());
    await page.evaluate((changes) => {
        const events = changes.map(function (change) {
            const node = RED.nodes.node(change.id);
            const old = {};
            old[change.property] = node[change.property];
            node[change.property] = change.value;
            node.changed = true;
            node.dirty = true;
            return { t: "edit", node: node, changes: old, changed: false, dirty: RED.nodes.dirty() };
        });
        RED.history.push({ t: "multi", events: events, dirty: RED.nodes.dirty() });
        RED.nodes.dirty(true);
        RED.view.redraw(true);
    }, edits);
    await page.click("#red-ui-header-button-deploy");
    // Deployed: the editor holds the new rev and nothing undeployed.
    await page.waitForFunction((old) => RED.nodes.version() && RED.nodes.version() !== old && !RED.nodes.dirty(),
        before, { timeout: 20000 });
    return page.evaluate(() => RED.nodes.version());
}

/** Wait until the service has kept deploy `rev` (it reads the flows off the deploy's path). */
async function waitCaptured(page, rev) {
    await page.waitForFunction((wanted) => NodeRedAiSidebar.adminApi.requestJson("GET",
        "ai-sidebar/flow-history?limit=5").then((body) => body.deploys.some((d) => d.rev === wanted), () => false),
    rev, { timeout: 30000, polling: 250 });
}

async function panelView(page) {
    return page.evaluate(() => {
        const panel = document.querySelector(".ai-sidebar-history");
        const sidebar = document.querySelector("#red-ui-sidebar").getBoundingClientRect();
        return {
            open: !!panel && panel.offsetParent !== null,
            status: panel ? panel.querySelector(".ai-sidebar-history-status").innerText.trim() : null,
            statusKind: panel ? panel.querySelector(".ai-sidebar-history-status").getAttribute("data-kind") : null,
            rows: Array.from(document.querySelectorAll(".ai-sidebar-history-deploy")).map((row) => ({
                rev: row.getAttribute("data-rev"),
                origin: row.getAttribute("data-origin"),
                when: row.querySelector(".ai-sidebar-history-time").innerText.trim(),
                datetime: row.querySelector(".ai-sidebar-history-time").getAttribute("datetime"),
                who: row.querySelector(".ai-sidebar-history-who").innerText.trim(),
                counts: row.querySelector(".ai-sidebar-history-counts").innerText.trim(),
                buttons: Array.from(row.querySelectorAll(".ai-sidebar-history-buttons button"))
                    .map((b) => b.innerText.trim() || b.getAttribute("aria-label"))
            })),
            // Nothing sticks out sideways: the panel scrolls only down, and stays inside the sidebar.
            fits: !!panel && panel.scrollWidth <= panel.clientWidth + 1 &&
                panel.getBoundingClientRect().right <= sidebar.right + 1,
            buttonInHeader: !!document.querySelector(".red-ui-sidebar-header .ai-sidebar-history-button") &&
                document.querySelector(".ai-sidebar-history-button").getBoundingClientRect().right <= sidebar.right + 1,
            newChatInside: document.querySelector(".ai-sidebar-new-chat").getBoundingClientRect().right <=
                sidebar.right + 1
        };
    });
}

async function diffView(page) {
    return page.evaluate(() => {
        const diff = document.querySelector(".ai-sidebar-history-diff");
        return {
            against: diff.querySelector(".ai-sidebar-history-against") ?
                diff.querySelector(".ai-sidebar-history-against").innerText.trim() : null,
            tabs: Array.from(diff.querySelectorAll(".ai-sidebar-history-tab")).map((tab) => ({
                id: tab.getAttribute("data-tab"),
                title: tab.querySelector(".ai-sidebar-history-tab-title").innerText.trim(),
                restore: Array.from(tab.querySelectorAll(":scope > .ai-sidebar-history-restore"))
                    .map((b) => b.innerText.trim()),
                lines: Array.from(tab.querySelectorAll(".ai-sidebar-history-lines > li")).map((line) => ({
                    kind: line.getAttribute("data-kind"),
                    node: line.getAttribute("data-node"),
                    label: line.querySelector(".ai-sidebar-history-kind").innerText.trim(),
                    name: line.querySelector(".ai-sidebar-history-node").innerText.trim(),
                    properties: Array.from(line.querySelectorAll(".ai-sidebar-history-properties > li"))
                        .map((p) => p.innerText.trim()),
                    restore: line.querySelector(".ai-sidebar-history-restore") ?
                        line.querySelector(".ai-sidebar-history-restore").getAttribute("aria-label") : null
                }))
            })),
            restoreWhole: !!diff.querySelector(":scope > .ai-sidebar-history-restore[data-scope=whole]")
        };
    });
}

async function editorState(page) {
    return page.evaluate((ids) => ({
        topic: RED.nodes.node(ids.node).topic,
        otherName: RED.nodes.node(ids.other).name,
        dirty: RED.nodes.dirty(),
        historyDepth: RED.history.depth()
    }), { node: env.NODE_ID, other: env.OTHER_NODE_ID });
}

async function openPanel(page) {
    await page.click(".ai-sidebar-history-button");
    await page.waitForFunction(() => {
        const status = document.querySelector(".ai-sidebar-history-status");
        return status && status.getAttribute("data-kind") !== "loading";
    }, null, { timeout: 20000 });
}

async function restoreMode(page, result) {
    await editor.showTab(page, env.TAB_ID);
    const topics = env.TOPICS.split(",");
    const names = env.OTHER_NAMES.split(",");
    result.revs = [];
    for (let i = 0; i < topics.length; i++) {
        result.revs.push(await editAndDeploy(page, [{ id: env.NODE_ID, property: "topic", value: topics[i] },
            { id: env.OTHER_NODE_ID, property: "name", value: names[i] }]));
        // As a person deploys, each deploy kept before the next: deploys faster than the service reads the flows
        // (on a busy machine, seconds) are kept as one (README, "Flow history").
        await waitCaptured(page, result.revs[i]);
    }
    await openPanel(page);
    result.panel = await panelView(page);
    const pin = page.locator(".ai-sidebar-history-deploy").first().locator(".ai-sidebar-history-pin");
    await pin.click();
    await page.waitForFunction(() => document.querySelector(".ai-sidebar-history-pin")
        .getAttribute("aria-pressed") === "true", null, { timeout: 10000 });
    result.pinLabel = await pin.getAttribute("aria-label");
    await page.locator(".ai-sidebar-history-deploy").first().locator(".ai-sidebar-history-changes").click();
    await page.waitForSelector(".ai-sidebar-history-diff .ai-sidebar-history-tab", { timeout: 20000 });
    result.diff = await diffView(page);
    await editor.screenshot(page, result, "sidebar-history" + suffix + ".png");
    await editor.detailScreenshot(page.locator(".ai-sidebar-history"), result, "sidebar-history-panel" + suffix + ".png");
    const width = await editor.sidebarWidth(page);
    result.width = width;
    result.narrowWidth = await editor.resizeSidebar(page, 240);
    result.narrowPanel = await panelView(page);
    await editor.screenshot(page, result, "sidebar-history-narrow" + suffix + ".png");
    await editor.detailScreenshot(page.locator(".ai-sidebar-history"), result,
        "sidebar-history-narrow-panel" + suffix + ".png");
    result.restoredWidth = await editor.resizeSidebar(page, width);
    result.before = await editorState(page);
    await page.locator(".ai-sidebar-history-tab[data-tab='" + env.TAB_ID + "'] > .ai-sidebar-history-restore").click();
    result.closedOnRestore = !(await page.locator(".ai-sidebar-history").isVisible());
    await page.waitForSelector(".ai-sidebar-approval", { timeout: 30000 });
    await editor.waitIdle(page);
    const card = page.locator(".ai-sidebar-approval").last();
    result.card = { text: (await card.innerText()).trim(),
        buttons: (await card.locator(".ai-sidebar-approval-buttons button:visible").allInnerTexts()).map((s) => s.trim()) };
    await editor.detailScreenshot(card, result, "sidebar-history-restore-card" + suffix + ".png");
    await card.locator(".ai-sidebar-approval-approve").click();
    await page.waitForFunction(() => document.querySelector(".ai-sidebar-approval-sent"), null, { timeout: 10000 });
    await editor.waitIdle(page);
    await page.waitForFunction((id) => RED.nodes.dirty(), env.NODE_ID, { timeout: 10000 });
    result.after = await editorState(page);
    result.applied = (await page.locator(".ai-sidebar-tool-applied").allInnerTexts()).map((s) => s.trim());
    result.errors = (await page.locator(".ai-sidebar-message-assistant .ai-sidebar-error:visible").allInnerTexts())
        .map((s) => s.trim());
    await editor.screenshot(page, result, "sidebar-history-restored" + suffix + ".png");
    result.question = (await page.locator(".ai-sidebar-message-user .ai-sidebar-text").last().innerText()).trim();
    // Another page of the editor (this one has undeployed changes): the conversation as the service kept it.
    const again = await editor.openEditor(page.context(), env.EDITOR_URL, {},
        { username: env.USERNAME, password: env.PASSWORD });
    await again.evaluate(() => RED.sidebar.show("ai-sidebar"));
    await again.waitForFunction(() => document.querySelector(".ai-sidebar-message-user .ai-sidebar-text") &&
        !document.querySelector(".ai-sidebar-loading"), null, { timeout: 15000 });
    result.reloadedQuestion = (await again.locator(".ai-sidebar-message-user .ai-sidebar-text").last().innerText())
        .trim();
    result.reloadedName = (await again.locator(".ai-sidebar-session-button .ai-sidebar-session-name").innerText())
        .trim();
    await editor.screenshot(again, result, "sidebar-history-restore-reloaded" + suffix + ".png");
}

/** The panel stays open while the user deploys: the new deploy appears in it once the service captured it. */
async function liveMode(page, result) {
    await editor.showTab(page, env.TAB_ID);
    await waitCaptured(page, await page.evaluate(() => RED.nodes.version()));
    await openPanel(page);
    result.before = (await panelView(page)).rows.map((row) => row.rev);
    result.rev = await editAndDeploy(page, [{ id: env.NODE_ID, property: "topic", value: env.TOPIC }]);
    await page.waitForSelector(".ai-sidebar-history-deploy[data-rev='" + result.rev + "']", { timeout: 30000 });
    await editor.waitIdle(page);
    result.panel = await panelView(page);
    await editor.detailScreenshot(page.locator(".ai-sidebar-history"), result, "sidebar-history-live" + suffix + ".png");
}

async function offMode(page, result) {
    if (env.LANGUAGE) {
        // The user's language, as the editor's own setting (User settings, View) keeps it.
        await page.evaluate((lang) => localStorage.setItem("editor-language", lang), env.LANGUAGE);
        await page.reload({ waitUntil: "domcontentloaded" });
        await editor.editorReady(page);
    }
    await page.evaluate(() => RED.sidebar.show("ai-sidebar"));
    await openPanel(page);
    result.panel = await panelView(page);
    await editor.detailScreenshot(page.locator(".ai-sidebar-history"), result, "sidebar-history-off" + suffix + ".png");
}

editor.runEditorScript(async function (page, result) {
    if (env.MODE === "off") {
        await offMode(page, result);
    } else if (env.MODE === "live") {
        await liveMode(page, result);
    } else {
        await restoreMode(page, result);
    }
});
