// Issue 31, finding 3 in the browser: the chat habits users bring from Copilot Chat (tests/test_browser_habits.py).
// Input (env): EDITOR_URL, USERNAME, PASSWORD, OUT_DIR, TAB_ID, QUESTION.
// Ask QUESTION; Up in the empty input brings it back, Down empties the input again; the answer's Copy button puts
// its Markdown on the clipboard; Regenerate (keyboard: focus and Enter) sends the question again and a second answer
// follows the first. Follow-up suggestions show under the newest answer only; one (keyboard: focus and Enter) asks it.
// Output: one JSON line on stdout.
"use strict";
const editor = require("./editor");

async function inputValue(page) {
    return page.evaluate(() => document.querySelector(".ai-sidebar-input").value);
}

editor.runEditorScript(async (page, result) => {
    const env = process.env;
    await page.context().grantPermissions(["clipboard-read", "clipboard-write"],
        { origin: new URL(env.EDITOR_URL).origin });
    await editor.showTab(page, env.TAB_ID);
    await editor.newChat(page);
    await editor.ask(page, env.QUESTION);
    result.firstAnswer = await editor.lastAnswerText(page);

    // Up in the empty input recalls the question; Down goes back to an empty input.
    await page.focus(".ai-sidebar-input");
    result.inputBefore = await inputValue(page);
    await page.keyboard.press("ArrowUp");
    result.afterUp = await inputValue(page);
    await page.keyboard.press("ArrowDown");
    result.afterDown = await inputValue(page);

    // Copy: the whole answer as Markdown.
    const copy = page.locator(".ai-sidebar-message-assistant .ai-sidebar-copy-answer");
    result.copyButtons = await copy.count();
    result.copyLabel = await copy.first().getAttribute("aria-label");
    await copy.first().click();
    await page.waitForFunction(() => navigator.clipboard.readText().then((text) => text.length > 0, () => false),
        null, { timeout: 10000 });
    result.copied = await page.evaluate(() => navigator.clipboard.readText().catch((err) => "error: " + err));

    // Regenerate under the last finished answer, with the keyboard.
    const regenerate = page.locator(".ai-sidebar-regenerate");
    result.regenerateButtons = await regenerate.count();
    result.regenerateLabel = await regenerate.first().getAttribute("aria-label");
    await editor.screenshot(page, result, "sidebar-habits-answer.png");
    await regenerate.first().focus();
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => document.querySelectorAll(".ai-sidebar-message-assistant").length === 2,
        null, { timeout: 30000 });
    await editor.waitIdle(page);
    result.transcript = await editor.transcript(page);
    // Only the last answer offers Regenerate; every answer keeps its Copy button.
    result.regenerateAfter = await page.locator(".ai-sidebar-message-assistant").evaluateAll((answers) =>
        answers.map((answer) => answer.querySelectorAll(".ai-sidebar-regenerate").length));
    result.copyAfter = await page.locator(".ai-sidebar-copy-answer").count();
    await editor.screenshot(page, result, "sidebar-habits-regenerated.png");
    await editor.detailScreenshot(page.locator(".ai-sidebar"), result, "sidebar-habits-regenerated-detail.png");

    // Follow-up suggestions: under the newest answer only, a group of buttons; one asks its question.
    result.followupsPerAnswer = await page.locator(".ai-sidebar-message-assistant").evaluateAll((answers) =>
        answers.map((answer) => answer.querySelectorAll(".ai-sidebar-followup").length));
    result.followupGroupLabel = await page.locator(".ai-sidebar-followups").getAttribute("aria-label");
    const followup = page.locator(".ai-sidebar-followup").first();
    result.followupText = (await followup.innerText()).trim();
    await followup.focus();
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => document.querySelectorAll(".ai-sidebar-message-assistant").length === 3,
        null, { timeout: 30000 });
    await editor.waitIdle(page);
    result.transcriptAfterFollowup = await editor.transcript(page);
    result.followupsAfter = await page.locator(".ai-sidebar-message-assistant").evaluateAll((answers) =>
        answers.map((answer) => answer.querySelectorAll(".ai-sidebar-followup").length));
    await editor.screenshot(page, result, "sidebar-habits-followup.png");
});
