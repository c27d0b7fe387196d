// Attachments (issue 37; tests/test_browser_attachments.py), the sidebar 240 px wide, with the keyboard: a PNG and
// a text file pasted into the input become two chips; the text file's chip is removed with Shift+Tab and Enter; the
// question goes out with the image (the service's own model takes images); then, with a text-only ai-config node
// chosen, a pasted PNG is refused with the service's sentence.
// Input (env): EDITOR_URL, USERNAME, PASSWORD, OUT_DIR, TAB_ID, PNG_BASE64, QUESTION, REFUSED_QUESTION, CONFIG_ID
// (the text-only ai-config node).
// Output: one JSON line on stdout.
"use strict";
const editor = require("./editor");

const env = process.env;

/** Paste files into the input as the browser does for a screenshot or a copied file (a ClipboardEvent). */
async function paste(page, files) {
    await page.evaluate((list) => {
        const transfer = new DataTransfer();
        list.forEach((file) => {
            const bytes = file.base64 ? Uint8Array.from(atob(file.base64), (c) => c.charCodeAt(0))
                : new TextEncoder().encode(file.text);
            transfer.items.add(new File([bytes], file.name, { type: file.type }));
        });
        const input = document.querySelector(".ai-sidebar-input");
        input.focus();
        input.dispatchEvent(new ClipboardEvent("paste", { clipboardData: transfer, bubbles: true, cancelable: true }));
    }, files);
}

async function chipNames(page) {
    return page.locator(".ai-sidebar-attachment-chips .ai-sidebar-node-chip-name").allInnerTexts();
}

async function waitForChips(page, count) {
    await page.waitForFunction((n) => document.querySelectorAll(".ai-sidebar-attachment-chip").length === n, count,
        { timeout: 15000 });
}

editor.runEditorScript(async (page, result) => {
    const before = await editor.sidebarWidth(page);
    result.width = await editor.resizeSidebar(page, 240);
    try {
        await editor.showTab(page, env.TAB_ID);
        await editor.newChat(page);
        await editor.waitIdle(page);

        // 1. A PNG and a text file pasted: two chips, named, in a named list.
        await paste(page, [{ name: "dashboard.png", type: "image/png", base64: env.PNG_BASE64 },
            { name: "notes.txt", type: "text/plain", text: "not-to-be-sent-notes" }]);
        await waitForChips(page, 2);
        result.chips = await chipNames(page);
        result.chipsLabel = await page.getAttribute(".ai-sidebar-attachment-chips", "aria-label");
        result.inputAfterPaste = await page.inputValue(".ai-sidebar-input");
        await editor.detailScreenshot(page.locator(".ai-sidebar-composer"), result, "attachments-chips.png");

        // The text file's chip (the last one, just above the input) removed with the keyboard.
        await page.focus(".ai-sidebar-input");
        await page.keyboard.press("Shift+Tab");
        result.focusedChip = await page.evaluate(() => document.activeElement.getAttribute("aria-label"));
        await page.keyboard.press("Enter");
        await waitForChips(page, 1);
        result.chipsAfterRemoval = await chipNames(page);

        // 2. Sent with the question; the chips go with it.
        await page.focus(".ai-sidebar-input");
        await page.keyboard.type(env.QUESTION);
        await page.keyboard.press("Enter");
        await editor.waitIdle(page);
        result.answer = await editor.lastAnswerText(page);
        result.sentContext = (await page.locator(".ai-sidebar-message-user .ai-sidebar-sent-context").last()
            .innerText()).trim();
        result.chipsAfterSend = await chipNames(page);
        await editor.screenshot(page, result, "attachments-answer.png");

        // 3. A text-only model: the pasted image is refused with the service's sentence.
        await editor.newChat(page);
        await page.waitForSelector(`.ai-sidebar-config option[value='${env.CONFIG_ID}']`,
            { state: "attached", timeout: 15000 });
        await page.selectOption(".ai-sidebar-config", env.CONFIG_ID);
        await paste(page, [{ name: "wiring.png", type: "image/png", base64: env.PNG_BASE64 }]);
        await waitForChips(page, 1);
        result.refused = await editor.ask(page, env.REFUSED_QUESTION);
        // Refused before any answer: the question and its file come back to the input, to send to another model.
        await waitForChips(page, 1);
        result.chipsAfterRefusal = await chipNames(page);
        result.inputAfterRefusal = await page.inputValue(".ai-sidebar-input");
        await editor.detailScreenshot(page.locator("#red-ui-sidebar"), result, "attachments-refused.png");
    } finally {
        await editor.resizeSidebar(page, before);
    }
}).catch((err) => { process.stderr.write(String(err && err.stack || err) + "\n"); process.exit(1); });
