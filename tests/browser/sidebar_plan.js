// Drives the build loop's cards (issue 34) in headless Debian Chromium with the sidebar 240 px wide, in the
// browser language LOCALE, and reports what the user saw as one JSON line on stdout.
// Input (env): EDITOR_URL, TAB_ID, MODE, OUT_DIR, USERNAME + PASSWORD, QUESTION, LOCALE, SHOT (screenshot prefix).
// Modes: plan (Plan chosen in the mode radio, the plan card, "Approve the plan's changes", the run goes on to its
// check and verdict), question (Agent mode, the question card, a quick reply, the run goes on).
// The sidebar applies approved changes in the editor and the user deploys, so the service checks nothing for it;
// in plan mode the request is sent with `apply: "deploy"` (as the ai-chat node sends it) so that the same run
// deploys, checks and ends with a verdict, which is what this script looks at.
// editor (Plan mode as the sidebar sends it, `apply: "editor"`: the approved change is applied in the editor, the
// "Deploy and test" card deploys the editor's flows, the run goes on to its check and verdict).
"use strict";
const editor = require("./editor");

const env = process.env;

async function cardView(page, selector) {
    const card = page.locator(selector).last();
    return {
        text: (await card.innerText()).trim(),
        buttons: (await card.locator("button:visible").allInnerTexts()).map((text) => text.trim()),
        fitsWidth: await card.evaluate((el) => el.scrollWidth <= el.clientWidth + 1 &&
            el.getBoundingClientRect().right <= document.querySelector("#red-ui-sidebar").getBoundingClientRect().right + 1)
    };
}

async function ask(page, selector) {
    await editor.newChat(page);
    await editor.waitIdle(page);
    await page.fill(".ai-sidebar-input", env.QUESTION);
    await page.click(".ai-sidebar-send");
    await page.waitForSelector(selector, { timeout: 30000 });
    await editor.waitIdle(page);
}

/** After a card's answer: the card as it reads now, and the continued answer. */
async function afterDecision(page, selector) {
    await page.waitForFunction((sel) => {
        const cards = document.querySelectorAll(sel);
        return cards.length && cards[cards.length - 1].classList.contains("ai-sidebar-approval-sent");
    }, selector, { timeout: 10000 });
    await editor.waitIdle(page, 60000);
    const card = page.locator(selector).last();
    return {
        decided: (await card.locator(".ai-sidebar-approval-decided").innerText()).trim(),
        status: (await card.locator(".ai-sidebar-approval-status").innerText()).trim(),
        enabledButtons: await card.locator("button:visible:enabled").count(),
        answer: await editor.lastAnswerText(page),
        errors: (await page.locator(".ai-sidebar-message-assistant .ai-sidebar-error:visible").allInnerTexts())
            .map((text) => text.trim())
    };
}

async function planMode(page, result) {
    await page.route("**/ai-sidebar/stream-chat", (route) => {
        const body = JSON.parse(route.request().postData());
        result.sentMode = body.mode;
        route.continue({ postData: JSON.stringify(Object.assign(body, { apply: "deploy" })) });
    });
    await page.click(".ai-sidebar-mode-plan");
    result.modeChecked = await page.getAttribute(".ai-sidebar-mode-plan", "aria-checked");
    result.modeLabels = (await page.locator(".ai-sidebar-mode button").allInnerTexts()).map((text) => text.trim());
    await ask(page, ".ai-sidebar-build-plan");
    result.card = await cardView(page, ".ai-sidebar-build-plan");
    result.steps = await page.locator(".ai-sidebar-build-plan .ai-sidebar-build-step").count();
    await editor.detailScreenshot(page.locator(".ai-sidebar-build-plan").last(), result, env.SHOT + "-plan-card.png");
    await editor.screenshot(page, result, env.SHOT + "-plan-card-page.png");
    // Keyboard: the plan's buttons are reached with Tab and pressed with Enter, as any button.
    await page.locator(".ai-sidebar-build-plan .ai-sidebar-build-approve-all").focus();
    await page.keyboard.press("Enter");
    Object.assign(result, await afterDecision(page, ".ai-sidebar-build-plan"));
    await page.waitForSelector(".ai-sidebar-build-verdict", { timeout: 30000 });
    result.checks = (await page.locator(".ai-sidebar-build-check").allInnerTexts()).map((text) => text.trim());
    result.verdict = {
        text: (await page.locator(".ai-sidebar-build-verdict").last().innerText()).trim(),
        status: await page.getAttribute(".ai-sidebar-build-verdict", "data-status"),
        fitsWidth: (await cardView(page, ".ai-sidebar-build-verdict")).fitsWidth
    };
    result.reader = (await page.locator(".ai-sidebar-sr-only").allInnerTexts()).join(" ");
    // The list follows a stream only while it is at its end; the user scrolls to the verdict, as here.
    await page.locator(".ai-sidebar-build-verdict").last().scrollIntoViewIfNeeded();
    await editor.detailScreenshot(page.locator(".ai-sidebar-build-verdict").last(), result,
        env.SHOT + "-verdict.png");
    await editor.screenshot(page, result, env.SHOT + "-plan-verdict.png");
}

async function verdictView(page, result, shot) {
    await page.waitForSelector(".ai-sidebar-build-verdict", { timeout: 30000 });
    result.checks = (await page.locator(".ai-sidebar-build-check").allInnerTexts()).map((text) => text.trim());
    result.verdict = {
        text: (await page.locator(".ai-sidebar-build-verdict").last().innerText()).trim(),
        status: await page.getAttribute(".ai-sidebar-build-verdict", "data-status"),
        fitsWidth: (await cardView(page, ".ai-sidebar-build-verdict")).fitsWidth
    };
    await page.locator(".ai-sidebar-build-verdict").last().scrollIntoViewIfNeeded();
    await editor.screenshot(page, result, shot);
}

async function editorMode(page, result) {
    await page.route("**/ai-sidebar/stream-chat", (route) => {
        const body = JSON.parse(route.request().postData());
        result.sentMode = body.mode;
        result.sentApply = body.apply;
        route.continue();
    });
    await page.click(".ai-sidebar-mode-plan");
    await ask(page, ".ai-sidebar-build-plan");
    await page.locator(".ai-sidebar-build-plan .ai-sidebar-build-approve-all").click();
    await page.waitForSelector(".ai-sidebar-build-deploy .ai-sidebar-build-deploy-test", { timeout: 30000 });
    await editor.waitIdle(page, 60000);
    result.dirtyBeforeDeploy = await page.evaluate(() => RED.nodes.dirty());
    result.deployCard = await cardView(page, ".ai-sidebar-build-deploy");
    await editor.detailScreenshot(page.locator(".ai-sidebar-build-deploy").last(), result,
        env.SHOT + "-deploy-card.png");
    await page.locator(".ai-sidebar-build-deploy .ai-sidebar-build-deploy-test").click();
    Object.assign(result, await afterDecision(page, ".ai-sidebar-build-deploy"));
    result.dirtyAfterDeploy = await page.evaluate(() => RED.nodes.dirty());
    await verdictView(page, result, env.SHOT + "-deploy-verdict.png");
}

async function questionMode(page, result) {
    await page.click(".ai-sidebar-mode-agent");
    await ask(page, ".ai-sidebar-build-question");
    result.card = await cardView(page, ".ai-sidebar-build-question");
    result.choices = (await page.locator(".ai-sidebar-build-question .ai-sidebar-build-choice").allInnerTexts())
        .map((text) => text.trim());
    result.freeLabel = (await page.locator(".ai-sidebar-build-question .ai-sidebar-build-free label").innerText())
        .trim();
    result.described = await page.locator(".ai-sidebar-build-question").last().evaluate((card) => {
        const described = document.getElementById(card.getAttribute("aria-describedby"));
        const labelled = document.getElementById(card.getAttribute("aria-labelledby"));
        return { role: card.getAttribute("role"), question: described && described.innerText.trim(),
            title: labelled && labelled.innerText.trim() };
    });
    await editor.detailScreenshot(page.locator(".ai-sidebar-build-question").last(), result,
        env.SHOT + "-question-card.png");
    await page.locator(".ai-sidebar-build-question .ai-sidebar-build-choice").first().click();
    Object.assign(result, await afterDecision(page, ".ai-sidebar-build-question"));
    await editor.screenshot(page, result, env.SHOT + "-question-answered.png");
}

editor.runEditorScript(async (page, result) => {
    await editor.showTab(page, env.TAB_ID);
    result.lang = await page.evaluate(() => RED.i18n.lang());
    result.width = await editor.resizeSidebar(page, 240);
    await ({ plan: planMode, editor: editorMode, question: questionMode })[env.MODE](page, result);
}, { viewport: { width: 1280, height: 800 }, locale: env.LOCALE });
