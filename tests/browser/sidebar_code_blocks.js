// Code blocks of answers, driven by sidebar_features.js (MODE=code-blocks): every block's bar (language, Copy),
// the sentence under JSON meant as a flow that cannot be imported, and a JavaScript block put into the selected
// function node (diff first, one undo step), at 1280×720 and with a narrow sidebar.
// Input (env): TAB_ID, FUNCTION_ID, QUESTION, NARROW_WIDTH.
"use strict";
const editor = require("./editor");

const env = process.env;

/** Every code block of the last answer: its kind, bar (label, buttons), the note under it, and overflow. */
async function blockBars(page) {
    return page.evaluate(() => {
        const answers = document.querySelectorAll(".ai-sidebar-message-assistant");
        const answer = answers[answers.length - 1];
        return Array.from(answer.querySelectorAll("pre")).filter((pre) => pre.querySelector(":scope > code"))
            .map((pre) => {
                const bar = pre.previousElementSibling;
                const note = pre.nextElementSibling && pre.nextElementSibling.classList.contains("ai-sidebar-code-note") ?
                    pre.nextElementSibling : null;
                const sidebar = document.querySelector(".ai-sidebar").getBoundingClientRect();
                const buttons = Array.from(bar.querySelectorAll("button"));
                return {
                    kind: pre.getAttribute("data-ai-sidebar-code"),
                    label: bar.querySelector(".ai-sidebar-code-label").innerText.trim(),
                    buttons: buttons.map((b) => b.innerText.trim()),
                    buttonsInside: buttons.every((b) => {
                        const r = b.getBoundingClientRect();
                        return r.width > 0 && r.left >= sidebar.left - 1 && r.right <= sidebar.right + 1;
                    }),
                    note: note ? note.innerText.trim() : null
                };
            });
    });
}

async function functionState(page, id) {
    return page.evaluate((nodeId) => {
        const node = RED.nodes.node(nodeId);
        return { func: node.func, changed: !!node.changed, historyDepth: RED.history.depth(), dirty: RED.nodes.dirty() };
    }, id);
}

async function codeBlocksMode(page, result, context) {
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: new URL(env.EDITOR_URL).origin });
    await page.setViewportSize({ width: 1280, height: 720 });
    await editor.showTab(page, env.TAB_ID);
    await page.evaluate(() => RED.view.select(""));
    await editor.newChat(page);
    await editor.ask(page, env.QUESTION);
    result.blocks = await blockBars(page);
    await editor.screenshot(page, result, "sidebar-code-blocks.png");

    // Nothing selected: a sentence under the block says what to do.
    const put = page.locator(".ai-sidebar-put-function").first();
    await put.click();
    result.noSelection = (await page.locator(".ai-sidebar-flow-status:visible").first().innerText()).trim();

    await page.locator(".ai-sidebar-code-copy").first().click();
    await editor.clipboardFilled(page);
    result.copied = await page.evaluate(() => navigator.clipboard.readText().catch((err) => "error: " + err));

    await page.evaluate((id) => { RED.view.reveal(id, false); RED.view.select(id); }, env.FUNCTION_ID);
    result.before = await functionState(page, env.FUNCTION_ID);
    await put.click();
    await page.waitForSelector(".ai-sidebar-put-dialog", { state: "visible" });
    result.dialog = await page.evaluate(() => {
        const dialog = document.querySelector(".ai-sidebar-put-dialog");
        const rows = (type) => Array.from(dialog.querySelectorAll(".ai-sidebar-diff-" + type)).map((r) => r.textContent);
        return { intro: dialog.querySelector("p").innerText.trim(), added: rows("added"), removed: rows("removed"),
            same: rows("same"), summary: dialog.querySelector(".ai-sidebar-diff-summary").innerText.trim() };
    });
    result.unchangedWhileShown = await functionState(page, env.FUNCTION_ID);
    await editor.screenshot(page, result, "sidebar-code-put-function-diff.png");
    const depth = await editor.historyDepth(page);
    await page.click(".ai-sidebar-put-apply");
    await editor.waitHistoryDepth(page, depth + 1);
    result.applied = await functionState(page, env.FUNCTION_ID);
    await editor.screenshot(page, result, "sidebar-code-put-function-applied.png");
    // Edit > Undo, as the editor's Ctrl+Z does on the workspace.
    await page.evaluate(() => RED.actions.invoke("core:undo"));
    await editor.waitHistoryDepth(page, depth);
    result.undone = await functionState(page, env.FUNCTION_ID);

    // Narrow the sidebar by dragging its separator, as a user does.
    const width = await editor.sidebarWidth(page);
    result.narrowWidth = await editor.resizeSidebar(page, Number(env.NARROW_WIDTH));
    result.narrowBlocks = await blockBars(page);
    await page.locator(".ai-sidebar-code-note").first().evaluate((note) => note.scrollIntoView({ block: "center" }));
    await editor.screenshot(page, result, "sidebar-code-blocks-narrow.png");
    await editor.resizeSidebar(page, width);
}

module.exports = { MODES: { "code-blocks": codeBlocksMode } };
