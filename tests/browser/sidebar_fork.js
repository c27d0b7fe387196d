// Edit and resend, and a checkpoint (issues 31 and 35) in headless Debian Chromium; reports what the user saw as one
// JSON line on stdout (tests/test_browser_fork.py).
// Input (env): EDITOR_URL, USERNAME, PASSWORD, OUT_DIR, TAB_ID, FIRST, SECOND (a change the model asks approval
// for), EDITED (the first question, edited).
// Ask FIRST, then SECOND; approve its change and deploy it; the answer that changed the flows offers "Restore flows
// to before this", which opens an approval card of the restore. Edit FIRST with the keyboard (Escape cancels once,
// then Enter sends EDITED with "Conversation and flows" chosen by keyboard): a new conversation answers it and asks
// for the restore to the first question's time (an approval card); the session list holds both, and the old
// conversation still shows both turns. The restore question's editor (no later answer changed flows) has no choice.
"use strict";
const editor = require("./editor");

const env = process.env;

async function askFor(page, question, selector) {
    await editor.waitIdle(page);
    await page.fill(".ai-sidebar-input", question);
    await page.click(".ai-sidebar-send");
    await page.waitForSelector(selector, { timeout: 30000 });
    await editor.waitIdle(page);
}

async function deploy(page) {
    const before = await page.evaluate(() => RED.nodes.version());
    await page.click("#red-ui-header-button-deploy");
    await page.waitForFunction((old) => RED.nodes.version() && RED.nodes.version() !== old && !RED.nodes.dirty(),
        before, { timeout: 20000 });
    const rev = await page.evaluate(() => RED.nodes.version());
    // The service keeps the deploy (it reads the flows off the deploy's path).
    await page.waitForFunction((wanted) => NodeRedAiSidebar.adminApi.requestJson("GET",
        "ai-sidebar/flow-history?limit=5").then((body) => body.deploys.some((d) => d.rev === wanted), () => false),
    rev, { timeout: 30000, polling: 250 });
    return rev;
}

/** The open conversation's id, as the session list marks it (the list is opened and closed again). */
async function currentSession(page) {
    await page.click(".ai-sidebar-session-button");
    const row = page.locator(".ai-sidebar-session-current[data-session-id]");
    await row.waitFor({ timeout: 20000 });
    const id = await row.getAttribute("data-session-id");
    await page.click(".ai-sidebar-session-button");
    await page.locator(".ai-sidebar-sessions").waitFor({ state: "hidden", timeout: 5000 });
    return id;
}

async function perAnswer(page, selector) {
    return page.locator(".ai-sidebar-message-assistant").evaluateAll((answers, sel) =>
        answers.map((answer) => answer.querySelectorAll(sel).length), selector);
}

editor.runEditorScript(async (page, result) => {
    await editor.showTab(page, env.TAB_ID);
    await editor.newChat(page);
    await editor.ask(page, env.FIRST);
    await askFor(page, env.SECOND, ".ai-sidebar-approval");
    await page.locator(".ai-sidebar-approval").last().locator(".ai-sidebar-approval-approve").click();
    await page.waitForFunction(() => document.querySelector(".ai-sidebar-approval-sent"), null, { timeout: 10000 });
    await editor.waitIdle(page);
    result.rev = await deploy(page);

    // The checkpoint: only under the answer that changed the flows.
    await page.waitForSelector(".ai-sidebar-checkpoint", { timeout: 20000 });
    result.checkpoints = await perAnswer(page, ".ai-sidebar-checkpoint");
    const checkpoint = page.locator(".ai-sidebar-checkpoint").first();
    result.checkpointLabel = await checkpoint.getAttribute("aria-label");
    result.checkpointText = (await checkpoint.innerText()).trim();
    result.checkpointTo = await checkpoint.getAttribute("data-to");
    result.askedAt = await page.locator(".ai-sidebar-message-user").evaluateAll((questions) =>
        questions.map((q) => q.getAttribute("data-asked-at")));
    await editor.detailScreenshot(page.locator(".ai-sidebar-message-assistant").nth(1), result,
        "sidebar-fork-checkpoint.png");
    await checkpoint.focus();
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => document.querySelectorAll(".ai-sidebar-approval").length === 2, null,
        { timeout: 30000 });
    await editor.waitIdle(page);
    const card = page.locator(".ai-sidebar-approval").last();
    result.restoreQuestion = (await page.locator(".ai-sidebar-message-user > .ai-sidebar-text").last().innerText())
        .trim();
    result.restoreCard = { text: (await card.innerText()).trim(),
        buttons: (await card.locator(".ai-sidebar-approval-buttons button:visible").allInnerTexts())
            .map((s) => s.trim()) };
    await editor.detailScreenshot(card, result, "sidebar-fork-restore-card.png");
    result.oldSession = await currentSession(page);
    result.before = await editor.transcript(page);

    // The restore question: no answer after it changed flows, so its editor offers no flows choice.
    await page.locator(".ai-sidebar-message-user").last().locator(".ai-sidebar-edit-question").click();
    await page.locator(".ai-sidebar-edit-question-input").waitFor({ timeout: 5000 });
    result.lastQuestionChoices = await page.locator(".ai-sidebar-edit-question-scope").count();
    await page.keyboard.press("Escape");
    await page.locator(".ai-sidebar-edit-question-input").waitFor({ state: "detached", timeout: 5000 });

    // Edit the first question with the keyboard: Escape cancels, then Enter sends the edited text.
    const edit = page.locator(".ai-sidebar-message-user").first().locator(".ai-sidebar-edit-question");
    result.editButtons = await page.locator(".ai-sidebar-edit-question").count();
    result.editLabel = await edit.getAttribute("aria-label");
    await edit.focus();
    await page.keyboard.press("Enter");
    const input = page.locator(".ai-sidebar-edit-question-input");
    await input.waitFor({ timeout: 5000 });
    result.editorFocused = await input.evaluate((el) => el === document.activeElement);
    result.editorValue = await input.inputValue();
    result.editorLabel = await input.getAttribute("aria-label");
    const scope = page.locator(".ai-sidebar-edit-question-scope");
    result.choice = {
        count: await scope.count(),
        label: await scope.getAttribute("aria-label"),
        options: (await scope.locator("label").allInnerTexts()).map((s) => s.trim()),
        checked: await scope.locator("input:checked").getAttribute("value")
    };
    await page.keyboard.press("Escape");
    result.afterEscape = {
        editors: await page.locator(".ai-sidebar-edit-question-input").count(),
        focusOnEdit: await edit.evaluate((el) => el === document.activeElement),
        text: (await page.locator(".ai-sidebar-message-user > .ai-sidebar-text").first().innerText()).trim()
    };
    await page.keyboard.press("Enter");
    await input.waitFor({ timeout: 5000 });
    await input.fill(env.EDITED);
    // Tab to the choice (the checked radio), the arrow picks "Conversation and flows", Shift+Tab back, Enter sends.
    await page.keyboard.press("Tab");
    await page.keyboard.press("ArrowRight");
    result.choice.chosen = await page.evaluate(() => document.activeElement.value);
    await editor.detailScreenshot(page.locator(".ai-sidebar-message-user").first(), result, "sidebar-fork-editor.png");
    await page.keyboard.press("Shift+Tab");
    await page.keyboard.press("Enter");
    // The edited question is answered, then the restore is asked for: its approval card closes the conversation.
    await page.waitForFunction((text) => {
        const questions = document.querySelectorAll(".ai-sidebar-message-user > .ai-sidebar-text");
        return questions.length === 2 && questions[0].innerText.trim() === text &&
            document.querySelectorAll(".ai-sidebar-approval").length === 1;
    }, env.EDITED, { timeout: 30000 });
    await editor.waitIdle(page);
    const forkCard = page.locator(".ai-sidebar-approval").last();
    result.forkRestore = {
        question: (await page.locator(".ai-sidebar-message-user > .ai-sidebar-text").last().innerText()).trim(),
        text: (await forkCard.innerText()).trim(),
        buttons: (await forkCard.locator(".ai-sidebar-approval-buttons button:visible").allInnerTexts())
            .map((s) => s.trim())
    };
    result.newSession = await currentSession(page);
    result.after = await editor.transcript(page);
    await editor.screenshot(page, result, "sidebar-fork-edited.png");

    // Both conversations are listed; the old one still holds its turns.
    await page.click(".ai-sidebar-session-button");
    await page.waitForFunction((ids) => ids.every((id) =>
        document.querySelector(".ai-sidebar-session[data-session-id='" + id + "']")),
    [result.oldSession, result.newSession], { timeout: 20000 });
    result.listed = await page.locator(".ai-sidebar-session[data-session-id]").evaluateAll((rows) => rows.map((row) => ({
        id: row.getAttribute("data-session-id"),
        label: row.querySelector(".ai-sidebar-session-label").innerText.trim()
    })));
    await editor.detailScreenshot(page.locator(".ai-sidebar-sessions"), result, "sidebar-fork-sessions.png");
    await page.locator(".ai-sidebar-session[data-session-id='" + result.oldSession + "'] .ai-sidebar-session-main")
        .click();
    await page.waitForFunction((n) => document.querySelectorAll(".ai-sidebar-message-user").length === n,
        result.before.filter((m) => m.role === "user").length, { timeout: 20000 });
    await editor.waitIdle(page);
    result.reopened = await editor.transcript(page);
    result.reopenedCheckpoints = await perAnswer(page, ".ai-sidebar-checkpoint");
    await editor.screenshot(page, result, "sidebar-fork-old-branch.png");
});
