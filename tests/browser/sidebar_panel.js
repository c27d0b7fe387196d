// Notices, usage and the Knowledge panel (issues 17 and 21, editor side), driven by sidebar_features.js: a
// question whose answer holds a flow with node types that are not installed, the notice under it, the Import
// button's mark, tokens and cost under the answer and for the conversation; then the Knowledge panel (sources,
// counts, freshness, Reindex). At 1280×720 and with a narrow sidebar (restored after).
// Input (env): TAB_ID, QUESTION, NARROW_WIDTH, REINDEX ("1": press Reindex and wait for its outcome), SHOT_SUFFIX
// (added to the screenshots' names, so a second user's run keeps the first's).
"use strict";
const editor = require("./editor");

const env = process.env;

async function answerParts(page) {
    return page.evaluate(() => {
        const answer = Array.from(document.querySelectorAll(".ai-sidebar-message-assistant")).pop();
        const notice = answer.querySelector(".ai-sidebar-notice");
        const importButton = answer.querySelector(".ai-sidebar-flow-import");
        const usage = answer.querySelector(".ai-sidebar-usage");
        const session = document.querySelector(".ai-sidebar-session-usage");
        const sidebar = document.querySelector(".ai-sidebar").getBoundingClientRect();
        const inside = (el) => {
            const box = el.getBoundingClientRect();
            return box.width > 0 && box.left >= sidebar.left - 0.5 && box.right <= sidebar.right + 0.5;
        };
        return {
            notice: notice && {
                code: notice.getAttribute("data-code"),
                heading: notice.querySelector(".ai-sidebar-notice-text").innerText.trim(),
                items: Array.from(notice.querySelectorAll("li")).map((li) => li.innerText.trim()),
                palette: notice.querySelector(".ai-sidebar-notice-palette") &&
                    notice.querySelector(".ai-sidebar-notice-palette").innerText.trim(),
                paletteShown: !!(notice.querySelector(".ai-sidebar-notice-palette") &&
                    notice.querySelector(".ai-sidebar-notice-palette").getBoundingClientRect().height > 0 &&
                    inside(notice.querySelector(".ai-sidebar-notice-palette"))),
                inside: inside(notice)
            },
            importTitle: importButton && importButton.getAttribute("title"),
            importWarned: !!(importButton && importButton.classList.contains("ai-sidebar-flow-import-warned")),
            usage: usage && { text: usage.innerText.trim(), title: usage.getAttribute("title"), inside: inside(usage) },
            session: session && session.offsetParent ? { text: session.innerText.trim(), inside: inside(session) } :
                null
        };
    });
}

async function panelParts(page) {
    return page.evaluate(() => {
        const panel = document.querySelector(".ai-sidebar-knowledge");
        const sidebar = document.querySelector(".ai-sidebar").getBoundingClientRect();
        const header = document.querySelector(".ai-sidebar .red-ui-sidebar-header").getBoundingClientRect();
        const button = document.querySelector(".ai-sidebar-knowledge-button").getBoundingClientRect();
        const newChat = document.querySelector(".ai-sidebar-new-chat").getBoundingClientRect();
        const reindex = panel.querySelector(".ai-sidebar-knowledge-reindex");
        const box = panel.getBoundingClientRect();
        return {
            open: !!panel.offsetParent,
            stores: Array.from(panel.querySelectorAll(".ai-sidebar-knowledge-store")).map((store) => ({
                store: store.getAttribute("data-store"),
                name: store.querySelector(".ai-sidebar-knowledge-store-name").innerText.trim(),
                counts: store.querySelector(".ai-sidebar-knowledge-counts").innerText.trim(),
                entries: Array.from(store.querySelectorAll(".ai-sidebar-knowledge-source")).map((e) => e.textContent)
            })),
            freshness: (panel.querySelector(".ai-sidebar-knowledge-freshness") || {}).textContent || null,
            lastError: (panel.querySelector(".ai-sidebar-knowledge-last-error") || {}).textContent || null,
            status: panel.querySelector(".ai-sidebar-knowledge-status").innerText.trim(),
            statusKind: panel.querySelector(".ai-sidebar-knowledge-status").getAttribute("data-kind"),
            reindexDisabled: reindex.disabled,
            readOnlyNote: !!panel.querySelector(".ai-sidebar-knowledge-readonly").offsetParent,
            inside: box.left >= sidebar.left - 0.5 && box.right <= sidebar.right + 0.5 && box.width > 0,
            buttonInHeader: button.width > 0 && button.right <= header.right + 0.5 && button.left >= header.left,
            newChatInside: newChat.width > 0 && newChat.right <= header.right + 0.5
        };
    });
}

async function openPanel(page) {
    await page.click(".ai-sidebar-knowledge-button");
    // The index's stores come with GET /ai-sidebar/knowledge; the document library's section (issue 37) is drawn
    // before that answer, so waiting for any store would read the panel half drawn.
    await page.waitForSelector('.ai-sidebar-knowledge-store[data-store="docs"]', { timeout: 60000 });
}

async function panelMode(page, result) {
    await page.setViewportSize({ width: 1280, height: 720 });
    await editor.showTab(page, env.TAB_ID);
    await editor.newChat(page);
    await editor.ask(page, env.QUESTION);
    await page.waitForSelector(".ai-sidebar-session-usage", { state: "visible", timeout: 15000 });
    result.answer = await answerParts(page);
    await editor.detailScreenshot(page.locator("#red-ui-sidebar"), result,
        "sidebar-notice-usage" + (env.SHOT_SUFFIX || "") + ".png");

    await openPanel(page);
    result.panel = await panelParts(page);
    if (env.REINDEX === "1") {
        // A reindex with nothing changed can end within a frame: every state the status line went through is kept.
        await page.evaluate(() => {
            const status = document.querySelector(".ai-sidebar-knowledge-status");
            window.__knowledgeStates = [];
            new MutationObserver(() => window.__knowledgeStates.push({ kind: status.getAttribute("data-kind"),
                disabled: document.querySelector(".ai-sidebar-knowledge-reindex").disabled }))
                .observe(status, { attributes: true, attributeFilter: ["data-kind"] });
        });
        await page.click(".ai-sidebar-knowledge-reindex");
        await page.waitForFunction(() => ["done", "error"].indexOf(document.querySelector(
            ".ai-sidebar-knowledge-status").getAttribute("data-kind")) !== -1, null, { timeout: 120000 });
        result.reindexRunning = await page.evaluate(() => window.__knowledgeStates[0]);
        result.afterReindex = await panelParts(page);
    }
    await editor.detailScreenshot(page.locator("#red-ui-sidebar"), result,
        "sidebar-knowledge" + (env.SHOT_SUFFIX || "") + ".png");
    await page.keyboard.press("Escape");
    result.closedByEscape = await page.evaluate(() => !document.querySelector(".ai-sidebar-knowledge").offsetParent);

    const before = await editor.sidebarWidth(page);
    try {
        result.narrowWidth = await editor.resizeSidebar(page, Number(env.NARROW_WIDTH));
        result.narrowAnswer = await answerParts(page);
        await editor.detailScreenshot(page.locator("#red-ui-sidebar"), result,
            "sidebar-notice-usage-narrow" + (env.SHOT_SUFFIX || "") + ".png");
        await openPanel(page);
        result.narrowPanel = await panelParts(page);
        await editor.detailScreenshot(page.locator("#red-ui-sidebar"), result,
            "sidebar-knowledge-narrow" + (env.SHOT_SUFFIX || "") + ".png");
        await page.click(".ai-sidebar-knowledge-close");
    } finally {
        await editor.resizeSidebar(page, before);
    }
}

module.exports = { MODES: { panel: panelMode } };
