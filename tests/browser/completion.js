// Drives inline completion (issue 39) in headless Debian Chromium in ONE editor load and reports what the user saw as
// one JSON line on stdout.
// Input (env): EDITOR_URL, OUT_DIR, USERNAME + PASSWORD, TAB_ID, INJECT_ID, FUNCTION_ID, CHANGE_ID, ANSWERS. The scripted model answers
// the completion requests in this order: the function's ghost text (Tab accepts it), another (Escape dismisses it),
// one it holds open (the user types on: the request is aborted; the script prints {"held": true} and waits for a
// line on stdin, sent once the model has that request), the one after it, and the expression editor's.
"use strict";
const readline = require("readline");
const editor = require("./editor");

const env = process.env;
const GHOST = ".ghost-text-decoration, .ghost-text";
const answers = JSON.parse(env.ANSWERS); // the code before the cursor → the model's answer

/** Put `text` into the editor in `selector`, the cursor at its end, and give it the focus. */
async function startWith(page, selector, text) {
    await page.evaluate(([where, value]) => {
        const found = window.NodeRedAiSidebar.assistEditors.codeEditorIn(where);
        found.setValue(value);
        const model = found.getModel();
        const end = model.getFullModelRange();
        found.setPosition({ lineNumber: end.endLineNumber, column: end.endColumn });
        found.focus();
    }, [selector, text]);
}

/** The ghost text shown in `selector` ("" for none). */
async function ghostText(page, selector) {
    return page.evaluate(([where, ghost]) => Array.from(document.querySelectorAll(where + " " + ghost.split(", ")
        .join(", " + where + " "))).map((el) => el.textContent).join(""), [selector, GHOST]);
}

/**
 * Wait until the ghost text in `selector` reads `expected` (Monaco may render it in pieces); returns what it shows
 * then, or after 15 s (the test compares).
 */
async function waitForGhost(page, selector, expected) {
    try {
        await page.waitForFunction(([where, ghost, text]) => Array.from(document.querySelectorAll(where + " " +
            ghost.split(", ").join(", " + where + " "))).map((el) => el.textContent).join("") === text,
        [selector, GHOST, expected], { timeout: 15000 });
    } catch {
        // Reported by what it shows.
    }
    return ghostText(page, selector);
}

async function value(page, selector) {
    return page.evaluate((where) => window.NodeRedAiSidebar.assistEditors.codeEditorIn(where).getValue(), selector);
}

/**
 * Resolves once the top edit dialog has the keyboard focus. Node-RED's tray focuses the dialog's first field as its
 * last opening step (red.js: a timer 150 ms after the form is built, late on a loaded machine); an editor focused
 * before then loses the focus to it, and Monaco stops a completion when its editor loses the focus.
 */
async function dialogFocused(page) {
    await page.waitForFunction(() => {
        const tray = $("#red-ui-editor-stack > .red-ui-tray").last()[0];
        return Boolean(tray && tray.contains(document.activeElement));
    }, null, { timeout: 15000 });
}

function nextLine(lines) {
    return new Promise((resolve) => lines.once("line", resolve));
}

async function functionSteps(page, result, lines) {
    const where = "#node-input-func-editor";
    await page.evaluate((id) => RED.editor.edit(RED.nodes.node(id)), env.FUNCTION_ID);
    await page.waitForSelector("#red-ui-editor-stack > .red-ui-tray #node-dialog-cancel", { timeout: 15000 });
    await page.waitForFunction((w) => window.NodeRedAiSidebar.assistEditors.codeEditorIn(w), where);
    await dialogFocused(page);
    // Tab accepts.
    // After a space, not a word: Monaco's own suggestions (its widget hides inline completions) have nothing to offer.
    await startWith(page, where, "const reading =");
    await page.keyboard.type(" ");
    result.ghost = await waitForGhost(page, where, answers["const reading = "]);
    await editor.screenshot(page, result, "completion-ghost.png");
    await page.keyboard.press("Tab");
    await page.waitForFunction((w) => !document.querySelector(w + " .ghost-text-decoration"), where);
    result.afterTab = await value(page, where);
    // Escape dismisses, and leaves the dialog open.
    await startWith(page, where, "msg.topic =");
    await page.keyboard.type(" ");
    result.ghostBeforeEscape = await waitForGhost(page, where, answers["msg.topic = "]);
    await page.keyboard.press("Escape");
    await page.waitForFunction((w) => !document.querySelector(w + " .ghost-text-decoration"), where);
    result.afterEscape = await value(page, where);
    result.dialogOpenAfterEscape = await page.locator("#func-tabs").isVisible();
    // Typing on while the model still answers: the request in flight is aborted.
    await startWith(page, where, "let level =");
    await page.keyboard.type(" ");
    process.stdout.write(JSON.stringify({ held: true }) + "\n");
    await nextLine(lines);
    await page.keyboard.type("1");
    result.ghostAfterTypingOn = await waitForGhost(page, where, answers["let level = 1"]);
    result.afterTypingOn = await value(page, where);
    await page.locator("#red-ui-editor-stack > .red-ui-tray").last().locator("#node-dialog-cancel").click();
    await page.waitForSelector("#func-tabs", { state: "detached", timeout: 10000 });
}

async function expressionSteps(page, result) {
    const where = "#red-ui-editor-type-expression";
    await page.evaluate((id) => RED.editor.edit(RED.nodes.node(id)), env.CHANGE_ID);
    await page.waitForSelector("#red-ui-editor-stack > .red-ui-tray #node-dialog-cancel", { timeout: 15000 });
    await page.locator(".node-input-rule-property-value").first().locator("xpath=..")
        .locator(".red-ui-typedInput-option-expand:visible").first().click();
    await page.waitForFunction((w) => window.NodeRedAiSidebar.assistEditors.codeEditorIn(w), where);
    await startWith(page, where, "$sum(payload.");
    await page.keyboard.type("i");
    result.expressionGhost = await waitForGhost(page, where, answers["$sum(payload.i"]);
    await page.keyboard.press("Tab");
    await page.waitForFunction((w) => !document.querySelector(w + " .ghost-text-decoration"), where);
    result.expressionAfterTab = await value(page, where);
}

/** The User Settings dialog's "AI assistant" pane: its checkbox and the toggle action switch the same setting. */
async function settingSteps(page, result) {
    const box = "#red-ui-settings-tab-ai-sidebar input.ai-sidebar-completion-setting";
    async function openPane() {
        await page.evaluate(() => RED.userSettings.show("ai-sidebar"));
        await page.waitForSelector(box, { state: "visible", timeout: 15000 });
    }
    async function closePane() {
        await page.evaluate(() => RED.tray.close());
        await page.waitForSelector(box, { state: "detached", timeout: 15000 });
    }
    await openPane();
    result.settingTab = (await page.locator("#user-settings-tabs .red-ui-tab.active").innerText()).trim();
    result.settingLabel = (await page.locator("#red-ui-settings-tab-ai-sidebar label").innerText()).trim();
    result.settingShownOn = await page.isChecked(box);
    await editor.screenshot(page, result, "completion-setting.png");
    await page.click(box);
    result.settingAfterUncheck = await page.evaluate(() => RED.settings.get("aiSidebarCompletion"));
    result.providerAfterUncheck = await page.evaluate(() => NodeRedAiSidebar.completionProvider.isOn());
    await closePane();
    await page.evaluate(() => RED.actions.invoke("ai-sidebar:toggle-inline-completion"));
    result.settingAfterAction = await page.evaluate(() => RED.settings.get("aiSidebarCompletion"));
    await openPane();
    result.settingShownAfterAction = await page.isChecked(box);
    await page.evaluate(() => RED.actions.invoke("ai-sidebar:toggle-inline-completion"));
    await closePane();
    await openPane();
    result.settingShownAfterSecondAction = await page.isChecked(box);
    await page.click(box); // on again, for the steps that follow
    result.settingAtEnd = await page.evaluate(() => RED.settings.get("aiSidebarCompletion"));
    await closePane();
}

async function main() {
    const result = {};
    const record = {};
    const lines = readline.createInterface({ input: process.stdin });
    const { browser, context } = await editor.launch({ width: 1280, height: 720 });
    result.completeRequests = 0;
    try {
        const page = await editor.openEditor(context, env.EDITOR_URL, record,
            { username: env.USERNAME, password: env.PASSWORD });
        page.on("request", (request) => {
            if (request.url().includes("ai-sidebar/complete")) {
                result.completeRequests += 1;
            }
        });
        await page.evaluate((id) => {
            RED.workspaces.show(id);
            RED.sidebar.show("debug");
        }, env.TAB_ID);
        // A message through the function node: the Debug sidebar shows it when the service's evidence does.
        await page.evaluate((id) => $.post("inject/" + id), env.INJECT_ID);
        await page.waitForSelector(".red-ui-debug-msg", { timeout: 15000 });
        await settingSteps(page, result);
        await functionSteps(page, result, lines);
        await expressionSteps(page, result);
    } catch (err) {
        result.failure = String(err && err.stack || err);
    } finally {
        result.pageErrors = record.pageErrors || [];
        result.consoleErrors = record.consoleErrors || [];
        lines.close();
        await browser.close();
    }
    process.stdout.write(JSON.stringify(result) + "\n");
}

main();
