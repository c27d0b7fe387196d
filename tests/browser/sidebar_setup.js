// Issue 31 in the browser: the Ask / Agent mode and the setup card (tests/test_browser_setup.py).
// Input (env): EDITOR_URL, USERNAME, PASSWORD, OUT_DIR, TAB_ID, MODE (see below), and for MODE=setup MODEL_URL
// (the scripted model server, an OpenAI-compatible endpoint) and API_KEY.
//  - MODE=ask: switch to Ask with the keyboard, ask for a change: the answer ends with the notice and its switch
//    button; the button switches to Agent and sends the question again, which gets an approval card; the mode is
//    remembered after a reload.
//  - MODE=setup: the service has no model: the empty state's setup card says why; a question fails with Retry and
//    the card; a new ai-config node is created from the card, deployed, chosen and tested; Retry then answers.
// Output: one JSON line on stdout.
"use strict";
const editor = require("./editor");

async function modeOf(page) {
    return page.evaluate(() => {
        const checked = document.querySelector(".ai-sidebar-mode [aria-checked='true']");
        return checked ? (checked.classList.contains("ai-sidebar-mode-ask") ? "ask" : "agent") : null;
    });
}

async function askMode(page, result) {
    const env = process.env;
    await editor.showTab(page, env.TAB_ID);
    await editor.newChat(page);
    result.initialMode = await modeOf(page);
    // Keyboard only: Tab reaches the chosen mode, an arrow key moves to the other.
    await page.focus(".ai-sidebar-mode [aria-checked='true']");
    await page.keyboard.press("ArrowLeft");
    result.afterArrow = await modeOf(page);
    result.focusedMode = await page.evaluate(() => document.activeElement.className);
    await editor.ask(page, "add a debug node for the alarms");
    const notice = page.locator(".ai-sidebar-notice[data-code='change_needs_agent']");
    result.noticeText = (await notice.count()) ? (await notice.innerText()).trim() : "";
    result.switchButtons = await page.locator(".ai-sidebar-notice-agent").count();
    await editor.screenshot(page, result, "sidebar-ask-mode-notice.png");
    await editor.detailScreenshot(page.locator(".ai-sidebar"), result, "sidebar-ask-mode-notice-detail.png");
    await page.click(".ai-sidebar-notice-agent");
    await page.waitForSelector(".ai-sidebar-approval", { timeout: 30000 });
    await editor.waitIdle(page);
    result.modeAfterSwitch = await modeOf(page);
    result.approvalCards = await page.locator(".ai-sidebar-approval").count();
    result.questions = await page.locator(".ai-sidebar-message-user").count();
    await editor.screenshot(page, result, "sidebar-agent-mode-card.png");
    await page.reload({ waitUntil: "domcontentloaded" });
    await editor.editorReady(page);
    result.modeAfterReload = await modeOf(page);
}

async function setup(page, result) {
    const env = process.env;
    await editor.showTab(page, env.TAB_ID);
    await editor.newChat(page);
    await page.waitForSelector(".ai-sidebar-empty .ai-sidebar-setup .ai-sidebar-setup-why", { timeout: 30000 });
    result.why = (await page.locator(".ai-sidebar-setup-why").innerText()).trim();
    result.modeLine = (await page.locator(".ai-sidebar-model").innerText()).trim();
    await editor.screenshot(page, result, "sidebar-setup-card.png");
    // A question before the fix fails, offers Retry and the card again.
    await editor.ask(page, "what does this flow do?");
    result.errorBeforeFix = (await page.locator(".ai-sidebar-error").last().innerText()).trim();
    result.cardAfterError = await page.locator(".ai-sidebar-messages > .ai-sidebar-setup").count();
    // Cancelling the dialog opened from the card leaves no ai-config node behind.
    const configNodes = () => page.evaluate(() => {
        const found = [];
        RED.nodes.eachConfig((node) => { if (node.type === "ai-config") { found.push(node.id); } });
        return found.length;
    });
    result.configNodesBefore = await configNodes();
    await page.click(".ai-sidebar-setup-create");
    await page.waitForSelector("#node-config-dialog-cancel", { timeout: 30000 });
    await page.click("#node-config-dialog-cancel");
    await page.waitForSelector("#node-config-dialog-cancel", { state: "detached", timeout: 10000 });
    result.configNodesAfterCancel = await configNodes();
    result.deployOfferedAfterCancel = await page.locator(".ai-sidebar-setup-deploy").count();
    // Create the ai-config node from the card, in its own edit dialog.
    await page.click(".ai-sidebar-setup-create");
    await page.waitForSelector("#node-config-input-provider option[value='openai-compatible']",
        { state: "attached", timeout: 30000 });
    await page.selectOption("#node-config-input-provider", "openai-compatible");
    await page.fill("#node-config-input-name", "Scripted model");
    await page.fill("#node-config-input-model", "scripted-model");
    await page.fill("#node-config-input-baseUrl", env.MODEL_URL);
    await page.fill("#node-config-input-apiKey", env.API_KEY);
    await editor.screenshot(page, result, "sidebar-setup-dialog.png");
    await page.click("#node-config-dialog-ok");
    // The editor deploys nothing while an edit tray shades the header: wait for it to close, as a user sees it.
    await page.waitForSelector("#node-config-dialog-ok", { state: "detached", timeout: 10000 });
    await page.waitForSelector("#red-ui-header-shade", { state: "hidden", timeout: 10000 });
    await page.waitForSelector(".ai-sidebar-setup-deploy", { timeout: 10000 });
    result.deployText = (await page.locator(".ai-sidebar-setup .ai-sidebar-setup-text").innerText()).trim();
    // What Node-RED's deploy notices say (editor-client deploy.js: RED.notify with HTML text).
    await page.evaluate(() => {
        window.seenNotices = [];
        const notify = RED.notify;
        RED.notify = function (message) {
            window.seenNotices.push(typeof message === "string" ? $("<div>").html(message).text() : $(message).text());
            return notify.apply(this, arguments);
        };
    });
    await page.click(".ai-sidebar-setup-deploy");
    await page.waitForFunction(() => !!$(".ai-sidebar-config").val(), null, { timeout: 30000 });
    result.deployNotices = await page.evaluate(() => window.seenNotices);
    result.chosenConfig = await page.evaluate(() => $(".ai-sidebar-config option:selected").text());
    result.cardText = (await page.locator(".ai-sidebar-setup .ai-sidebar-setup-text").innerText()).trim();
    await page.click(".ai-sidebar-setup-test");
    await page.waitForSelector(".ai-sidebar-setup-ok, .ai-sidebar-setup-failed", { timeout: 30000 });
    result.testResult = (await page.locator(".ai-sidebar-setup-result").innerText()).trim();
    result.testOk = await page.locator(".ai-sidebar-setup-ok").count() > 0;
    await editor.screenshot(page, result, "sidebar-setup-tested.png");
    await editor.detailScreenshot(page.locator(".ai-sidebar"), result, "sidebar-setup-tested-detail.png");
    // Edit opens the chosen node's own dialog (where a refused key or a wrong URL is fixed); Cancel changes nothing.
    await page.click(".ai-sidebar-setup-edit");
    await page.waitForSelector("#node-config-dialog-ok", { state: "visible", timeout: 10000 });
    // The tray's buttons come before its form (the node's template, then oneditprepare): wait for the field.
    await page.waitForSelector("#node-config-input-name", { state: "visible", timeout: 30000 });
    result.editDialog = await page.evaluate(() => ({
        name: $("#node-config-input-name").val(),
        chosen: $(".ai-sidebar-config").val(),
        editing: (RED.nodes.node($(".ai-sidebar-config").val()) || {}).name
    }));
    await page.click("#node-config-dialog-cancel");
    await page.waitForSelector("#node-config-dialog-ok", { state: "detached", timeout: 10000 });
    result.dirtyAfterEditCancel = await page.evaluate(() => RED.nodes.dirty());
    // Retry the failed question: it goes out with the configuration chosen now.
    await page.locator(".ai-sidebar-retry:visible").last().click();
    await editor.waitIdle(page);
    result.answerAfterRetry = await editor.lastAnswerText(page);
    result.modelLineAfter = (await page.locator(".ai-sidebar-model").innerText()).trim();
    result.cardAfterAnswer = await page.locator(".ai-sidebar-messages .ai-sidebar-setup").count();
    await editor.screenshot(page, result, "sidebar-setup-answered.png");
}

editor.runEditorScript(async (page, result) => {
    if (process.env.MODE === "ask") {
        await askMode(page, result);
    } else {
        await setup(page, result);
    }
});
