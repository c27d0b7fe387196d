// Accessibility, driven by sidebar_features.js (MODE=a11y): a keyboard user asks, the answer is read out a
// sentence at a time through a polite live region, focus stays in the tab while it streams, Escape stops it, and
// an axe-core scan of the tab (wide and narrow) finds nothing serious or critical. At 1280×720.
// Input (env): TAB_ID, QUESTIONS (JSON: [streamed question, second question]), NARROW_WIDTH.
"use strict";
const editor = require("./editor");

const env = process.env;

/** An axe-core scan of the AI tab: its version, the rules that passed, and the serious and critical findings. */
async function axeScan(page) {
    if (!(await page.evaluate(() => !!window.axe))) {
        await page.addScriptTag({ path: require.resolve("axe-core/axe.min.js") });
    }
    return page.evaluate(async () => {
        const results = await window.axe.run(document.querySelector(".ai-sidebar"), { resultTypes: ["violations"] });
        return {
            version: window.axe.version,
            // The rules that ran and passed (color-contrast among them when text was checked).
            passed: results.passes.map((p) => p.id),
            findings: results.violations.filter((v) => v.impact === "serious" || v.impact === "critical")
                .map((v) => ({ id: v.id, impact: v.impact, help: v.help,
                    targets: v.nodes.map((n) => n.target.join(" ")) }))
        };
    });
}

/** Whether the conversation, the last answer's table and its code block scroll sideways. */
async function boxes(page) {
    return page.evaluate(() => {
        const scrolls = (el) => !!el && el.scrollWidth > el.clientWidth + 1;
        const answers = document.querySelectorAll(".ai-sidebar-message-assistant");
        const answer = answers[answers.length - 1];
        const messages = document.querySelector(".ai-sidebar-messages");
        const right = messages.getBoundingClientRect().right;
        return {
            // What sticks out to the right, for a failure's message (inside a scrolling box that is fine).
            wider: Array.from(messages.querySelectorAll("*")).filter((el) => el.getBoundingClientRect().right > right + 1)
                .slice(0, 5).map((el) => el.tagName + "." + el.className),
            conversation: scrolls(messages),
            table: scrolls(answer.querySelector("table")),
            code: scrolls(answer.querySelector("pre"))
        };
    });
}

async function a11yMode(page, result) {
    const [streamed, second, wide] = JSON.parse(env.QUESTIONS);
    await page.setViewportSize({ width: 1280, height: 720 });
    await editor.showTab(page, env.TAB_ID);
    await editor.newChat(page);
    await editor.waitIdle(page);
    result.inputLabel = await page.getAttribute(".ai-sidebar-input", "aria-label");
    await page.focus(".ai-sidebar-input");
    await page.keyboard.type(streamed);
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => document.querySelectorAll(".ai-sidebar-answer-live p").length >= 2,
        null, { timeout: 20000 });
    result.whileStreaming = await page.evaluate(() => ({
        focused: document.activeElement && document.activeElement.className,
        focusInTab: document.querySelector(".ai-sidebar").contains(document.activeElement),
        live: document.querySelector(".ai-sidebar-answer-live").getAttribute("aria-live"),
        read: Array.from(document.querySelectorAll(".ai-sidebar-answer-live p")).map((p) => p.textContent)
    }));
    await editor.screenshot(page, result, "sidebar-a11y-streaming.png");
    await page.keyboard.press("Escape");
    await editor.waitIdle(page);
    result.afterEscape = await page.evaluate(() => {
        const answers = document.querySelectorAll(".ai-sidebar-message-assistant");
        const answer = answers[answers.length - 1];
        return {
            stopped: answer.querySelectorAll(".ai-sidebar-stopped").length,
            focused: document.activeElement && document.activeElement.className
        };
    });
    await editor.ask(page, second);
    result.readAfterSecond = await page.evaluate(() => Array.from(
        document.querySelectorAll(".ai-sidebar-answer-live p")).map((p) => p.textContent));
    // An answer with a wide table and a long code line: they scroll in their own boxes, not the conversation.
    await editor.ask(page, wide);
    result.wideLayout = await boxes(page);
    result.wideFindings = await axeScan(page);
    await editor.screenshot(page, result, "sidebar-a11y-scanned.png");

    const width = await editor.sidebarWidth(page);
    await editor.resizeSidebar(page, Number(env.NARROW_WIDTH));
    result.narrowLayout = await boxes(page);
    result.narrowFindings = await axeScan(page);
    await editor.screenshot(page, result, "sidebar-a11y-scanned-narrow.png");
    await editor.resizeSidebar(page, width);
}

module.exports = { MODES: { "a11y": a11yMode }, axeScan };
