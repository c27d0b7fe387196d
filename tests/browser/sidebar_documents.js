// The Knowledge panel's document library (issue 37; tests/test_browser_documents.py), the sidebar 240 px wide, with
// the keyboard alone: open the panel (Enter on its button), add a Markdown file with the file picker (Enter on Add
// document), see it listed with its passages, close (Escape) and ask a question it answers; then delete it (Enter
// on its delete button) and ask again.
// Input (env): EDITOR_URL, USERNAME, PASSWORD, OUT_DIR, TAB_ID, DOC_NAME, DOC_TEXT, QUESTION.
// Output: one JSON line on stdout.
"use strict";
const editor = require("./editor");

const env = process.env;

// Opened, and its library read again: the panel lists the documents anew from that answer, replacing the buttons
// (a button focused before the answer came would be gone, seen in a loaded CI run). The counts of an earlier
// opening are no sign of it: the list's rows from before are marked, and the list is read once none is left.
async function openPanel(page) {
    await page.evaluate(() => document.querySelectorAll(".ai-sidebar-documents-list > *")
        .forEach((row) => row.setAttribute("data-ai-test-stale", "")));
    await page.locator(".ai-sidebar-knowledge-button").press("Enter");
    await page.waitForFunction(() => !document.querySelector(".ai-sidebar-documents-list > [data-ai-test-stale]") &&
        document.querySelector(".ai-sidebar-documents .ai-sidebar-knowledge-counts").textContent.trim() !== "",
    null, { timeout: 30000 });
}

async function listed(page) {
    return page.evaluate(() => Array.from(document.querySelectorAll(".ai-sidebar-document")).map((item) => ({
        name: item.querySelector(".ai-sidebar-document-name").textContent,
        detail: item.querySelector(".ai-sidebar-document-detail").textContent,
        scope: item.getAttribute("data-scope")
    })));
}

/** Ask with the keyboard: typed into the input, sent with Enter; the answer's text once the sidebar is idle. */
async function ask(page, question) {
    await editor.waitIdle(page);
    await page.focus(".ai-sidebar-input");
    await page.keyboard.type(question);
    await page.keyboard.press("Enter");
    await editor.waitIdle(page);
    return editor.lastAnswerText(page);
}

async function closePanel(page) {
    await page.keyboard.press("Escape");
    await page.waitForSelector(".ai-sidebar-knowledge", { state: "hidden", timeout: 15000 });
}

/**
 * The next file chooser the page opens. Listened to from the script's start: Playwright turns the page's file
 * chooser interception on when the first listener is added and does not wait for the browser to confirm it, so a
 * listener added just before the key press could miss a chooser a loaded machine opened first (seen in a CI run).
 */
function fileChoosers(page) {
    const waiting = [];
    page.on("filechooser", (chooser) => waiting.splice(0).forEach((resolve) => resolve(chooser)));
    return (timeout) => new Promise((resolve, reject) => {
        const timer = setTimeout(async () => {
            const focused = await page.evaluate(() => document.activeElement && document.activeElement.className)
                .catch(() => "?");
            reject(new Error("no file chooser within " + timeout + " ms (the focus on: " + focused + ")"));
        }, timeout);
        waiting.push((chooser) => { clearTimeout(timer); resolve(chooser); });
    });
}

editor.runEditorScript(async (page, result) => {
    const nextChooser = fileChoosers(page);
    const before = await editor.sidebarWidth(page);
    result.width = await editor.resizeSidebar(page, 240);
    try {
        await editor.showTab(page, env.TAB_ID);
        await editor.newChat(page);
        await editor.waitIdle(page);

        // 1. Added with the file picker, opened with the keyboard.
        await openPanel(page);
        result.countsBefore = (await page.locator(".ai-sidebar-documents .ai-sidebar-knowledge-counts").innerText())
            .trim();
        const opened = nextChooser(15000);
        await page.locator(".ai-sidebar-documents-pick").press("Enter");
        const chooser = await opened;
        await chooser.setFiles({ name: env.DOC_NAME, mimeType: "text/markdown", buffer: Buffer.from(env.DOC_TEXT) });
        await page.waitForSelector(".ai-sidebar-document", { timeout: 30000 });
        result.listed = await listed(page);
        result.status = (await page.locator(".ai-sidebar-documents-status").innerText()).trim();
        result.countsAfter = (await page.locator(".ai-sidebar-documents .ai-sidebar-knowledge-counts").innerText())
            .trim();
        result.inside = await page.evaluate(() => {
            const sidebar = document.querySelector(".ai-sidebar").getBoundingClientRect();
            return Array.from(document.querySelectorAll(".ai-sidebar-document, .ai-sidebar-documents-add"))
                .every((el) => {
                    const box = el.getBoundingClientRect();
                    return box.width > 0 && box.left >= sidebar.left - 0.5 && box.right <= sidebar.right + 0.5;
                });
        });
        await editor.detailScreenshot(page.locator("#red-ui-sidebar"), result, "documents-added.png");
        await closePanel(page);

        // 2. A question the document answers.
        result.answer = await ask(page, env.QUESTION);
        result.tools = (await editor.transcript(page)).pop().tools;
        await editor.screenshot(page, result, "documents-answer.png");

        // 3. Deleted with the keyboard: the list is empty and the focus stays in the panel.
        await openPanel(page);
        await page.focus(".ai-sidebar-document-delete");
        result.deleteLabel = await page.evaluate(() => document.activeElement.getAttribute("aria-label"));
        await page.keyboard.press("Enter");
        await page.waitForSelector(".ai-sidebar-documents-empty", { timeout: 30000 });
        result.listedAfterDelete = await listed(page);
        result.focusAfterDelete = await page.evaluate(() => document.activeElement.className);
        result.statusAfterDelete = (await page.locator(".ai-sidebar-documents-status").innerText()).trim();
        await editor.detailScreenshot(page.locator("#red-ui-sidebar"), result, "documents-deleted.png");
        await closePanel(page);

        // 4. The same question once it is gone.
        await editor.newChat(page);
        result.answerAfterDelete = await ask(page, env.QUESTION);
        result.toolsAfterDelete = (await editor.transcript(page)).pop().tools;
    } finally {
        await editor.resizeSidebar(page, before);
    }
}).catch((err) => { process.stderr.write(String(err && err.stack || err) + "\n"); process.exit(1); });
