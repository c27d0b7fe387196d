// The context a question went out with, driven by sidebar_features.js (MODE=context-seen): shown under the
// question, kept on the chip while its answer streams, and back to the default after "New chat". At 1280×720.
// Input (env): TAB_ID, QUESTION.
"use strict";
const editor = require("./editor");

const env = process.env;

async function chipText(page) {
    // textContent: the chip's name and counts are flex items, which innerText would put on lines of their own.
    return (await page.locator(".ai-sidebar-context").textContent()).trim();
}

async function contextSeenMode(page, result) {
    await page.setViewportSize({ width: 1280, height: 720 });
    await editor.showTab(page, env.TAB_ID);
    await editor.newChat(page);
    await editor.waitIdle(page);
    await page.evaluate((id) => {
        const nodes = RED.nodes.filterNodes({ z: id }).filter((n) => n.type !== "comment").slice(0, 2);
        RED.view.select({ nodes: nodes });
    }, env.TAB_ID);
    result.chipBefore = await chipText(page);
    await page.fill(".ai-sidebar-input", env.QUESTION);
    await page.click(".ai-sidebar-send");
    await page.waitForFunction(() => {
        const text = document.querySelector(".ai-sidebar-message-assistant .ai-sidebar-text");
        return text && text.innerText.trim().length > 20 && document.querySelector(".ai-sidebar-cursor");
    }, null, { timeout: 20000 });
    await page.evaluate(() => RED.view.select(""));
    result.chipWhileStreaming = await chipText(page);
    await editor.screenshot(page, result, "sidebar-context-while-streaming.png");
    await editor.waitIdle(page);
    result.chipAfter = await chipText(page);
    result.sentContext = (await page.locator(".ai-sidebar-message-user .ai-sidebar-sent-context").last().innerText())
        .trim();
    await editor.screenshot(page, result, "sidebar-context-sent-with-question.png");
    await page.click(".ai-sidebar-context-remove");
    result.chipRemoved = await chipText(page);
    await editor.newChat(page);
    result.chipAfterNewChat = await chipText(page);
}

module.exports = { MODES: { "context-seen": contextSeenMode } };
