// Drives the Node-RED editor in headless Debian Chromium (playwright-core): asks a question that a reasoning model
// answers after thinking, and records the "Thinking" block while the model thinks and once the answer is there.
// Input (env): EDITOR_URL, TAB_ID, QUESTION, FINAL_TEXT, OUT_DIR. Output: one JSON line on stdout.
"use strict";
const path = require("path");
const editor = require("./editor");

async function blockState(page) {
    return page.evaluate(() => {
        const blocks = document.querySelectorAll(".ai-sidebar-message-assistant .ai-sidebar-thinking");
        const block = blocks[blocks.length - 1];
        if (!block) return null;
        const answer = block.closest(".ai-sidebar-message-assistant");
        const texts = Array.from(answer.querySelectorAll(".ai-sidebar-text")).map((e) => e.innerText.trim());
        return {
            count: blocks.length, open: block.open,
            label: block.querySelector("summary").innerText.trim(),
            tooltip: block.querySelector("summary").title,
            thoughts: block.querySelector(".ai-sidebar-thinking-text").textContent,
            thoughtsVisible: block.querySelector(".ai-sidebar-thinking-text").checkVisibility(),
            answerTexts: texts,
            // The block comes before the answer's text in the message.
            beforeText: texts.length > 0 && !!(block.compareDocumentPosition(answer.querySelector(".ai-sidebar-text"))
                & Node.DOCUMENT_POSITION_FOLLOWING)
        };
    });
}

async function main() {
    const { EDITOR_URL, TAB_ID, QUESTION, FINAL_TEXT, OUT_DIR } = process.env;
    const { browser, context } = await editor.launch();
    const result = {};
    const record = {};
    try {
        const page = await editor.openEditor(context, EDITOR_URL, record, null);
        await page.evaluate((tabId) => { RED.workspaces.show(tabId); RED.sidebar.show("ai-sidebar"); }, TAB_ID);
        await page.fill(".ai-sidebar-input", QUESTION);
        await page.click(".ai-sidebar-actions .primary");
        // While the model thinks: the block is there, open, before any answer text.
        await page.waitForFunction(() => {
            const body = document.querySelector(".ai-sidebar-message-assistant .ai-sidebar-thinking-text");
            return body && body.textContent.length > 0;
        }, null, { timeout: 60000 });
        result.thinking = await blockState(page);
        result.thinkingScreenshot = path.join(OUT_DIR, "sidebar-thinking-open.png");
        await page.screenshot({ path: result.thinkingScreenshot });
        await page.waitForFunction((final) => {
            const texts = document.querySelectorAll(".ai-sidebar-message-assistant .ai-sidebar-text");
            return texts.length && texts[texts.length - 1].innerText.includes(final);
        }, FINAL_TEXT, { timeout: 60000 });
        await page.waitForFunction(() => !document.querySelector(".ai-sidebar-input").disabled, null,
            { timeout: 30000 });
        result.answered = await blockState(page);
        result.answeredScreenshot = path.join(OUT_DIR, "sidebar-thinking-closed.png");
        await page.screenshot({ path: result.answeredScreenshot });
        await page.click(".ai-sidebar-message-assistant .ai-sidebar-thinking > summary");
        result.reopened = await blockState(page);
    } catch (err) {
        const page = context.pages()[0];
        const html = page ? await page.evaluate(() => Array.from(document.querySelectorAll(
            ".ai-sidebar-message-assistant")).map((e) => e.outerHTML.slice(0, 3000))) : null;
        throw new Error(String(err && err.message) + "\nassistant messages: " + JSON.stringify(html));
    } finally {
        result.pageErrors = record.pageErrors || [];
        await browser.close();
    }
    process.stdout.write(JSON.stringify(result) + "\n");
}

main().catch((err) => { process.stderr.write(String(err && err.stack || err) + "\n"); process.exit(1); });
