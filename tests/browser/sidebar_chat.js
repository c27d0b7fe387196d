// Drives the Node-RED editor in headless Debian Chromium (playwright-core): opens the AI tab on a given
// workspace tab, asks a question and records what the user sees while the answer streams.
// Input (env): EDITOR_URL, TAB_ID, QUESTION, FINAL_TEXT, OUT_DIR, optionally USERNAME + PASSWORD (adminAuth).
// Output: one JSON line on stdout.
"use strict";
const path = require("path");
const editor = require("./editor");

async function main() {
    const { EDITOR_URL, TAB_ID, QUESTION, FINAL_TEXT, OUT_DIR, USERNAME, PASSWORD } = process.env;
    const { browser, context } = await editor.launch();
    const result = { partialTexts: [] };
    const record = {};
    try {
        const page = await editor.openEditor(context, EDITOR_URL, record,
            USERNAME ? { username: USERNAME, password: PASSWORD } : null);
        await page.evaluate((tabId) => { RED.workspaces.show(tabId); RED.sidebar.show("ai-sidebar"); }, TAB_ID);
        result.activeTab = await page.evaluate(() => RED.workspaces.active());
        await page.fill(".ai-sidebar-input", QUESTION);
        await page.click(".ai-sidebar-actions .primary");
        const answer = page.locator(".ai-sidebar-message-assistant .ai-sidebar-text").last();
        const deadline = Date.now() + 30000;
        let text = "";
        while (Date.now() < deadline) {
            text = (await answer.count()) ? (await answer.innerText()).trim() : "";
            if (text && !result.partialTexts.includes(text)) result.partialTexts.push(text);
            if (text.includes(FINAL_TEXT)) break;
            await page.waitForTimeout(50);
        }
        await page.waitForFunction(() => !document.querySelector(".ai-sidebar-input").disabled, null,
            { timeout: 10000 });
        result.finalText = text;
        result.toolCards = await page.locator(".ai-sidebar-tool").count();
        result.errors = await page.locator(".ai-sidebar-error").allInnerTexts();
        result.layout = await editor.sidebarLayout(page);
        result.screenshot = path.join(OUT_DIR, "sidebar-explain-current-flow.png");
        await page.screenshot({ path: result.screenshot });
    } finally {
        result.pageErrors = record.pageErrors || [];
        await browser.close();
    }
    process.stdout.write(JSON.stringify(result) + "\n");
}

main().catch((err) => { process.stderr.write(String(err && err.stack || err) + "\n"); process.exit(1); });
