// Recovery, driven by sidebar_features.js (MODE=retry): a failed answer puts the question back and offers Retry,
// which resends the same request; a cut-off answer offers Retry too; a reload shows the faults as sentences.
// Input (env): TAB_ID, QUESTIONS (JSON: [failing question, question whose answer is cut off]).
"use strict";
const editor = require("./editor");

const env = process.env;

/** The last answer: its text, error lines and Retry buttons, and what the input holds. */
async function lastAnswer(page) {
    return page.evaluate(() => {
        const answers = document.querySelectorAll(".ai-sidebar-message-assistant");
        const answer = answers[answers.length - 1];
        return {
            text: answer.innerText.trim(),
            errors: Array.from(answer.querySelectorAll(".ai-sidebar-error")).map((e) => e.innerText.trim()),
            retry: Array.from(answer.querySelectorAll(".ai-sidebar-retry")).map((b) => b.innerText.trim()),
            input: document.querySelector(".ai-sidebar-input").value
        };
    });
}

async function retryMode(page, result, context, record) {
    const [failing, cutOff] = JSON.parse(env.QUESTIONS);
    const bodies = [];
    page.on("request", (request) => {
        if (request.url().includes("/ai-sidebar/stream-chat") && request.method() === "POST") {
            bodies.push(JSON.parse(request.postData()));
        }
    });
    await page.setViewportSize({ width: 1280, height: 720 });
    await editor.showTab(page, env.TAB_ID);
    await page.evaluate(() => RED.view.select(""));
    await editor.newChat(page);
    await editor.ask(page, failing);
    result.failed = await lastAnswer(page);
    await editor.screenshot(page, result, "sidebar-retry-failed.png");

    await page.locator(".ai-sidebar-retry").last().click();
    await editor.waitIdle(page);
    result.retried = await lastAnswer(page);
    await editor.screenshot(page, result, "sidebar-retry-answered.png");

    await editor.ask(page, cutOff);
    result.cutOff = await lastAnswer(page);
    await editor.screenshot(page, result, "sidebar-retry-cut-off.png");
    result.bodies = bodies;

    const again = await editor.openEditor(context, env.EDITOR_URL, record,
        env.USERNAME ? { username: env.USERNAME, password: env.PASSWORD } : null);
    await again.setViewportSize({ width: 1280, height: 720 });
    await editor.showTab(again, env.TAB_ID);
    await again.waitForFunction(() => document.querySelectorAll(".ai-sidebar-message").length >= 4 &&
        !document.querySelector(".ai-sidebar-loading"), null, { timeout: 15000 });
    result.reloaded = await again.evaluate(() => Array.from(
        document.querySelectorAll(".ai-sidebar-message-assistant .ai-sidebar-error, .ai-sidebar-message-assistant .ai-sidebar-note"))
        .map((e) => e.innerText.trim()));
    await again.evaluate(() => {
        const messages = document.querySelector(".ai-sidebar-messages");
        messages.scrollTop = messages.scrollHeight;
    });
    await editor.screenshot(again, result, "sidebar-retry-reloaded.png");
}

module.exports = { MODES: { "retry": retryMode } };
