// Drives "Ask the assistant" in the node edit dialogs (issue 20) in headless Debian Chromium at 1280×720, in ONE
// editor load, and reports what the user saw as one JSON line on stdout.
// Input (env): EDITOR_URL, OUT_DIR, USERNAME + PASSWORD, TAB_ID, INJECT_ID, FUNCTION_ID, CHANGE_ID, and the user's
// descriptions FUNCTION_ASK, JSONATA_ASK, JSON_ASK; TEST_MESSAGE (the expression editor's Test tab).
// Steps, each answered by the next scripted model reply: the function dialog's button (a proposal with a problem;
// Cancel), the shortcut (a clean proposal, sandbox output once "Try on the last message" is pressed; Accept; Ctrl-Z), the expression editor (an invalid
// expression refused, then a valid one with its test result; Accept), the JSON editor (Stop while streaming, then
// Accept).
"use strict";
const editor = require("./editor");

const env = process.env;
const VIEWPORT = { width: 1280, height: 720 };
const ASSIST_KEY = "Alt+Shift+KeyG";

/** The dialog's code per part, read from the function node's own code editors. */
async function functionCode(page) {
    return page.evaluate((id) => {
        const node = RED.nodes.node(id);
        return { onMessage: node.editor.getValue(), onStart: node.initEditor.getValue() };
    }, env.FUNCTION_ID);
}

/** Type the description into the open assist panel and press Send; returns the panel. */
async function send(page, description) {
    const panel = page.locator(".ai-assist-panel:visible");
    const field = panel.locator(".ai-assist-description");
    // Node-RED's Monaco editor takes the focus back 300 ms after it shows again (editor-client monaco.js
    // "focusMemory"; the panel takes it back at once, resources/assist-panel.js): text typed in that moment lands in
    // the code editor below. CI saw the description typed into the expression editor, then a Send with none.
    // Waited for on the page's own timers: one set now with more than 300 ms runs after the editor's.
    await editor.pageTimers(page, 400);
    await field.fill(description);
    if ((await field.inputValue()) !== description) {
        throw new Error("the description did not reach the assist panel: " + JSON.stringify(await field.inputValue()));
    }
    await panel.locator(".ai-assist-send").click();
    return panel;
}

/** Send the description and wait until the stream ended (Send is back). */
async function sendAndWait(page, description, partials) {
    const panel = await send(page, description);
    // The model streams slowly: the text is read while it grows, until Send shows again.
    for (let i = 0; i < 600; i++) {
        const streaming = await page.locator(".ai-assist-stream.ai-assist-streaming").count();
        if (partials) {
            partials.push(await panel.locator(".ai-assist-stream").innerText());
        }
        if (!streaming && await panel.locator(".ai-assist-send").isVisible()) {
            return;
        }
        await page.waitForTimeout(50);
    }
    throw new Error("the assist stream did not end");
}

async function panelView(page) {
    const dialog = page.locator(".ai-assist-dialog:visible");
    return page.evaluate(() => {
        const panel = document.querySelector(".ai-assist-dialog .ai-assist-panel");
        const texts = (selector) => Array.from(panel.querySelectorAll(selector)).map((el) => el.innerText.trim());
        return {
            stream: texts(".ai-assist-stream").join(""),
            status: texts(".ai-assist-status").join(""),
            parts: Array.from(panel.querySelectorAll(".ai-assist-part")).map((part) => ({
                part: part.getAttribute("data-part"),
                label: part.querySelector(".ai-assist-part-label").innerText.trim(),
                added: Array.from(part.querySelectorAll(".ai-assist-diff-added")).map((el) => el.innerText),
                removed: Array.from(part.querySelectorAll(".ai-assist-diff-removed")).map((el) => el.innerText)
            })),
            problems: Array.from(panel.querySelectorAll(".ai-assist-problem")).map((el) => ({
                code: el.getAttribute("data-code"), text: el.innerText.trim() })),
            noProblems: texts(".ai-assist-no-problems").join(""),
            sandboxError: Array.from(panel.querySelectorAll(".ai-assist-sandbox-error")).map((el) => ({
                code: el.getAttribute("data-code"), text: el.innerText.trim() })),
            sandboxOutputs: texts(".ai-assist-sandbox-output"),
            expression: texts(".ai-assist-expression").join(""),
            testResult: texts(".ai-assist-test-result").join(""),
            json: texts(".ai-assist-json-text").join(""),
            acceptEnabled: !document.querySelector(".ai-assist-dialog .ai-assist-accept").disabled,
            fitsWidth: panel.scrollWidth <= panel.clientWidth + 1
        };
    }).then(async (view) => {
        view.fitsViewport = await dialog.evaluate((el) => {
            const box = el.getBoundingClientRect();
            return box.left >= 0 && box.right <= window.innerWidth && box.top >= 0 && box.bottom <= window.innerHeight;
        });
        return view;
    });
}

/** Wait for the check's answer to be shown (the sandbox runs only when Try is pressed: `tryInSandbox`). */
async function waitForChecks(page) {
    await page.waitForFunction(() => {
        const panel = document.querySelector(".ai-assist-dialog .ai-assist-panel");
        const problems = panel.querySelector(".ai-assist-problems");
        return problems && (problems.querySelector(".ai-assist-problem, .ai-assist-no-problems") ||
            problems.classList.contains("ai-assist-error"));
    }, null, { timeout: 15000 });
}

/**
 * Note how many `function-sandbox` requests the page sent before the user pressed anything (issue 29: a proposal
 * never runs on arrival), press "Try on the last message" and wait for the sandbox's answer.
 */
async function tryInSandbox(page, result) {
    result.sandboxRequestsBeforeTry.push(result.sandboxRequests);
    result.tryLabels.push((await page.locator(".ai-assist-dialog .ai-assist-sandbox-try").innerText()).trim());
    await page.click(".ai-assist-dialog .ai-assist-sandbox-try");
    await page.waitForFunction(() => {
        const sandbox = document.querySelector(".ai-assist-dialog .ai-assist-sandbox");
        return sandbox.querySelector(".ai-assist-section-label") || sandbox.classList.contains("ai-assist-error");
    }, null, { timeout: 15000 });
}

/** Press the inject node and wait until the Debug sidebar shows the message (the service sees it the same way). */
async function injectOnce(page) {
    const before = await page.locator(".red-ui-debug-msg").count();
    await page.evaluate((id) => $.post("inject/" + id), env.INJECT_ID);
    await page.waitForFunction((count) => document.querySelectorAll(".red-ui-debug-msg").length > count, before,
        { timeout: 15000 });
}

async function openNodeDialog(page, id) {
    await page.evaluate((nodeId) => RED.editor.edit(RED.nodes.node(nodeId)), id);
    await page.waitForSelector("#red-ui-editor-stack > .red-ui-tray #node-dialog-cancel", { timeout: 15000 });
}

/**
 * Close the top tray with its Cancel or Done button and wait until `gone` (a part of that tray) left the page:
 * Node-RED detaches the trays below the top one, so the count of trays does not tell.
 */
async function closeTray(page, selector, gone) {
    await page.locator("#red-ui-editor-stack > .red-ui-tray").last().locator(selector).click();
    await page.waitForSelector(gone, { state: "detached", timeout: 10000 });
    // The tray below is back once its own buttons are.
    await page.waitForFunction(() => !document.querySelector("#red-ui-editor-stack > .red-ui-tray") ||
        document.querySelector("#red-ui-editor-stack > .red-ui-tray #node-dialog-cancel"), null, { timeout: 10000 });
}

async function functionSteps(page, result) {
    await injectOnce(page);
    await openNodeDialog(page, env.FUNCTION_ID);
    await page.waitForSelector(".ai-assist-function-button", { timeout: 15000 });
    result.before = await functionCode(page);
    result.button = {
        label: await page.locator(".ai-assist-function-button").getAttribute("aria-label"),
        inTabsRow: await page.locator(".func-tabs-row .ai-assist-function-button").count() === 1
    };
    await editor.detailScreenshot(page.locator(".red-ui-tray").last(), result, "assist-function-dialog.png");

    // 1. The button; a proposal with a require of a module not in Setup; Cancel.
    await page.click(".ai-assist-function-button");
    await page.waitForSelector(".ai-assist-dialog:visible");
    result.partials = [];
    await sendAndWait(page, env.FUNCTION_ASK, result.partials);
    await waitForChecks(page);
    await tryInSandbox(page, result);
    result.first = await panelView(page);
    await editor.screenshot(page, result, "assist-function-problems.png");
    await page.click(".ai-assist-dialog .ai-assist-cancel");
    await page.waitForSelector(".ai-assist-dialog", { state: "detached" });
    result.afterCancel = await functionCode(page);

    // 2. The shortcut with the focus in the code editor; a clean proposal, run on the recent message; Accept.
    await page.click("#node-input-func-editor .view-lines");
    await page.keyboard.press(ASSIST_KEY);
    await page.waitForSelector(".ai-assist-dialog:visible", { timeout: 5000 });
    await sendAndWait(page, env.FUNCTION_ASK);
    await waitForChecks(page);
    await tryInSandbox(page, result);
    result.second = await panelView(page);
    await editor.screenshot(page, result, "assist-function-diff.png");
    await page.click(".ai-assist-dialog .ai-assist-accept");
    await page.waitForSelector(".ai-assist-dialog", { state: "detached" });
    result.afterAccept = await functionCode(page);
    await editor.screenshot(page, result, "assist-function-accepted.png");

    // 3. Ctrl-Z in the On Message code editor brings the old code back in one step.
    await page.click("#node-input-func-editor .view-lines");
    await page.keyboard.press("Control+z");
    result.afterUndo = await functionCode(page);

    // The dialog's own Cancel: the node keeps its code, nothing to deploy.
    await closeTray(page, "#node-dialog-cancel", "#func-tabs");
    result.nodeAfter = await page.evaluate((id) => ({ func: RED.nodes.node(id).func, dirty: RED.nodes.dirty() }),
        env.FUNCTION_ID);
}

async function expressionSteps(page, result) {
    await openNodeDialog(page, env.CHANGE_ID);
    // The rule's JSONata value: its typed input's expand button opens the expression editor.
    await page.locator(".node-input-rule-property-value").first().locator("xpath=..")
        .locator(".red-ui-typedInput-option-expand:visible").first().click();
    await page.waitForSelector(".ai-assist-jsonata-button", { timeout: 15000 });
    // The Test tab's example message, typed as the user would.
    await page.locator("#red-ui-editor-type-expression-tabs li").last().click();
    await page.evaluate((text) => {
        const found = window.NodeRedAiSidebar.assistEditors.codeEditorIn("#red-ui-editor-type-expression-test-data");
        found.setValue(text);
    }, env.TEST_MESSAGE);
    result.expressionBefore = await page.evaluate(() => window.NodeRedAiSidebar.assistEditors
        .codeEditorIn("#red-ui-editor-type-expression").getValue());
    await page.click(".ai-assist-jsonata-button");
    await page.waitForSelector(".ai-assist-dialog:visible");
    await sendAndWait(page, env.JSONATA_ASK);
    result.invalid = await panelView(page);
    await editor.screenshot(page, result, "assist-jsonata-refused.png");
    await sendAndWait(page, env.JSONATA_ASK);
    await page.waitForSelector(".ai-assist-test-result", { timeout: 10000 });
    result.valid = await panelView(page);
    await editor.screenshot(page, result, "assist-jsonata-result.png");
    await page.click(".ai-assist-dialog .ai-assist-accept");
    await page.waitForSelector(".ai-assist-dialog", { state: "detached" });
    result.expressionAfter = await page.evaluate(() => window.NodeRedAiSidebar.assistEditors
        .codeEditorIn("#red-ui-editor-type-expression").getValue());
    await closeTray(page, "#node-dialog-ok", "#red-ui-editor-type-expression");
    await closeTray(page, "#node-dialog-cancel", "#node-input-rule-container");
}

async function jsonSteps(page, result) {
    await openNodeDialog(page, env.INJECT_ID);
    // The payload's JSON: its typed input's expand button opens the JSON editor.
    await page.locator(".red-ui-typedInput-option-expand:visible").first().click();
    await page.waitForSelector(".ai-assist-json-button", { timeout: 15000 });
    result.jsonBefore = await page.evaluate(() => window.NodeRedAiSidebar.assistEditors
        .codeEditorIn("#node-input-json").getValue());
    await page.click(".ai-assist-json-button");
    await page.waitForSelector(".ai-assist-dialog:visible");
    // Stop while the model still streams: what came so far stays, nothing is offered.
    const panel = await send(page, env.JSON_ASK);
    await page.waitForFunction(() => (document.querySelector(".ai-assist-stream") || {}).textContent, null,
        { timeout: 15000 });
    await panel.locator(".ai-assist-stop").click();
    await panel.locator(".ai-assist-send").waitFor({ state: "visible", timeout: 10000 });
    result.stopped = await panelView(page);
    await sendAndWait(page, env.JSON_ASK);
    result.json = await panelView(page);
    await editor.screenshot(page, result, "assist-json.png");
    await page.click(".ai-assist-dialog .ai-assist-accept");
    await page.waitForSelector(".ai-assist-dialog", { state: "detached" });
    result.jsonAfter = await page.evaluate(() => window.NodeRedAiSidebar.assistEditors
        .codeEditorIn("#node-input-json").getValue());
    await closeTray(page, "#node-dialog-ok", "#node-input-json");
    await closeTray(page, "#node-dialog-cancel", "#node-input-property-container");
}

async function main() {
    const result = {};
    const { browser, context } = await editor.launch(VIEWPORT);
    try {
        const page = await editor.openEditor(context, env.EDITOR_URL, result,
            { username: env.USERNAME, password: env.PASSWORD });
        await page.evaluate((id) => {
            RED.workspaces.show(id);
            RED.sidebar.show("debug");
        }, env.TAB_ID);
        result.shortcut = await page.evaluate(() => ({
            ours: RED.keyboard.getShortcut("node-red-contrib-ai-sidebar:assist-function"),
            sameKey: RED.actions.list().filter((a) => a.key === "alt-shift-g").map((a) => a.id)
        }));
        result.errorStacks = [];
        result.sandboxRequests = 0;
        result.sandboxRequestsBeforeTry = [];
        result.tryLabels = [];
        page.on("request", (request) => {
            if (request.url().includes("ai-sidebar/function-sandbox")) {
                result.sandboxRequests += 1;
            }
        });
        await page.evaluate(() => { Error.stackTraceLimit = 200; });
        page.on("pageerror", (err) => result.errorStacks.push(String(err.stack).split("\n").slice(-25).join("\n")));
        // Which step a page error happened in.
        result.errorSteps = {};
        for (const [name, step] of [["function", functionSteps], ["jsonata", expressionSteps], ["json", jsonSteps]]) {
            const before = result.pageErrors.length;
            await step(page, result);
            result.errorSteps[name] = result.pageErrors.length - before;
        }
    } catch (err) {
        result.failure = String(err && err.stack || err);
    } finally {
        await browser.close();
    }
    process.stdout.write(JSON.stringify(result) + "\n");
}

main();
