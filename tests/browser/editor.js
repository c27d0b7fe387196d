// Shared steps for the browser scripts: open the Node-RED editor in headless Debian Chromium (playwright-core),
// log in when adminAuth is on, answer Node-RED's first-visit prompts, and use the AI sidebar as a user would.
"use strict";
const path = require("path");
const { chromium } = require("playwright-core");

const CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"];

/**
 * Chromium and one browser context (one profile: pages share localStorage, hence the editor's login), in the
 * language `locale` when given. `viewport` is the window in CSS pixels ({width, height}, default 1400×900);
 * another context of the same browser (a second profile) takes the same with `browser.newContext({ viewport })`.
 */
async function launch(viewport, locale) {
    const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
                                            args: CHROMIUM_FLAGS });
    // `locale` (e.g. "de"): the browser's language, which the editor takes when the user chose none.
    const context = await browser.newContext(Object.assign({ viewport: viewport || { width: 1400, height: 900 } },
        locale ? { locale } : {}));
    return { browser, context };
}

/**
 * The frame of a one-page browser script: launch Chromium, open the editor at `env.EDITOR_URL` logged in as
 * `env.USERNAME`/`env.PASSWORD`, run `body(page, result)`, then print `result` as one JSON line with `failure` (an
 * exception's stack), `pageErrors` and `monacoFoldingRaces` (what openEditor recorded), the browser closed in every
 * case.
 *
 * @param {function(object, object): Promise<void>} body the checks, filling `result`
 * @param {{viewport: (object|undefined), locale: (string|undefined)}} [options] as for launch()
 */
async function runEditorScript(body, options) {
    const env = process.env;
    const { browser, context } = await launch((options || {}).viewport, (options || {}).locale);
    const result = {};
    const record = {};
    try {
        const page = await openEditor(context, env.EDITOR_URL, record, { username: env.USERNAME, password: env.PASSWORD });
        await body(page, result);
    } catch (err) {
        result.failure = String(err && err.stack || err);
    } finally {
        result.pageErrors = record.pageErrors || [];
        result.monacoFoldingRaces = record.monacoFoldingRaces || [];
        await browser.close();
    }
    process.stdout.write(JSON.stringify(result) + "\n");
}

/**
 * A new page on the editor, ready to use: logged in (when `credentials` are given and the profile has no
 * token yet), workspace loaded, the AI sidebar built. Page errors, console errors (`{text, url}`: a failed
 * request is logged with its URL as `url`) and JavaScript dialogs (alert, confirm) are recorded in `record`.
 */
async function openEditor(context, url, record, credentials) {
    const page = await context.newPage();
    record.pageErrors = record.pageErrors || [];
    record.consoleErrors = record.consoleErrors || [];
    record.dialogs = record.dialogs || [];
    record.monacoFoldingRaces = record.monacoFoldingRaces || [];
    // The message and where it was thrown (the stack's first frames: whose code, ours or Node-RED's).
    page.on("pageerror", (err) => {
        const seen = String(err) + (err && err.stack ? "\n" + String(err.stack).split("\n")
            .filter((l) => /^\s+at /.test(l)).slice(0, 6).join("\n") : "");
        (monacoFoldingRace(err) ? record.monacoFoldingRaces : record.pageErrors).push(seen);
    });
    page.on("console", (message) => {
        if (message.type() === "error") {
            record.consoleErrors.push({ text: message.text(), url: (message.location() || {}).url || "" });
        }
    });
    page.on("dialog", (dialog) => {
        record.dialogs.push(dialog.message());
        dialog.dismiss().catch(() => {});
    });
    await page.goto(url + "/", { waitUntil: "domcontentloaded" });
    if (credentials) {
        await login(page, credentials);
    }
    await editorReady(page);
    return page;
}

/**
 * Whether the page error `err` is Monaco 0.52's folding (Node-RED 4.1's bundled editor) computing on a model already
 * disposed. Node-RED 4.1 disposes a code editor's model before it takes it from the editor (editor-client red.js:
 * setMode and destroy call model.dispose() then setModel(null); on "editor:close" it disposes every model left); a
 * folding computation then in flight gets nothing from the language's provider (the TypeScript or JSON worker) and
 * falls back to IndentRangeProvider.compute, which reads model.getOptions(): "Model is disposed!", rethrown by
 * Monaco's error handler on a timer ("message\n\nstack"). Every frame is Monaco's. CI saw it once on a loaded
 * machine (assist.js, a dialog closed just after its code changed); it is recorded apart (`monacoFoldingRaces`), so
 * any other page error still fails a test.
 */
function monacoFoldingRace(err) {
    const stack = String(err && err.stack || "");
    const frames = stack.split("\n").filter((l) => /^\s+at /.test(l));
    return String(err && err.message || "").startsWith("Model is disposed!") && frames.length > 0 &&
        frames.every((l) => l.includes("/vendor/monaco/dist/")) && /\.getOptions \(/.test(stack) &&
        /\.compute \(/.test(stack);
}

async function login(page, credentials) {
    await page.waitForSelector("#node-dialog-login-username, .ai-sidebar", { timeout: 30000 });
    if (!(await page.locator("#node-dialog-login-username").count())) {
        return;
    }
    await page.fill("#node-dialog-login-username", credentials.username);
    await page.fill("#node-dialog-login-password", credentials.password);
    await page.click("#node-dialog-login-submit");
}

/**
 * Wait for the workspace and the sidebar, then answer the prompts a first visit may show. Node-RED (4.1 and 5,
 * editor-client red.js) hides its loading bar, then 100 ms later asks about telemetry and starts the welcome tour
 * (the test Node-REDs turn both off): the wait is for the hidden bar, then for that step to have run.
 */
async function editorReady(page) {
    await page.waitForFunction(() => window.RED && RED.workspaces && RED.workspaces.active() &&
        document.querySelector(".ai-sidebar") && !$("#red-ui-loading-progress").is(":visible"), null,
        { timeout: 30000 });
    // The prompts' step is a 100 ms timer the editor set when it hid the bar (or just before): a timer of the page set
    // now with a longer delay runs after it, however late a busy machine runs both.
    await pageTimers(page, 150);
    for (let i = 0; i < 3; i++) {
        const dialog = page.locator(".red-ui-popover.red-ui-dialog .red-ui-dialog-toolbar button");
        const tour = page.locator(".red-ui-tourGuide-popover");
        let shown;
        if (await dialog.count()) {
            shown = ".red-ui-popover.red-ui-dialog";
            await dialog.last().click();
        } else if (await tour.count()) {
            shown = ".red-ui-tourGuide-popover";
            await page.keyboard.press("Escape");
        } else break;
        // Answered: the prompt is gone (the next one, if any, is asked after that).
        await page.waitForSelector(shown, { state: "hidden", timeout: 15000 });
        await pageTimers(page, 150);
    }
}

/** Resolves once a timer of the page set now with `ms` has run: after every page timer set before with less. */
async function pageTimers(page, ms) {
    await page.evaluate((delay) => new Promise((resolve) => setTimeout(resolve, delay)), ms);
}

/** Show a workspace tab and the AI sidebar tab. */
async function showTab(page, tabId) {
    await page.evaluate((id) => {
        RED.workspaces.show(id);
        RED.sidebar.show("ai-sidebar");
    }, tabId);
}

/**
 * The AI tab's button and the row of tab buttons holding it: in the sidebar's own tab row on Node-RED 4.1, in the
 * editor's footer bar of sidebar buttons on Node-RED 5.
 */
function tabButton(page) {
    return page.locator("#red-ui-tab-ai-sidebar-link-button, .red-ui-sidebar-tab-bar button[data-tab-id='ai-sidebar']");
}

function tabButtonRow(page) {
    return page.locator("#red-ui-sidebar .red-ui-tabs, .red-ui-sidebar-tab-bar");
}

/**
 * What the AI tab's layout gives the user, in CSS pixels: the message area's and the sidebar's heights, and
 * whether the last answer's last line is inside the message area's visible part.
 */
async function sidebarLayout(page) {
    return page.evaluate(() => {
        const messages = document.querySelector(".ai-sidebar-messages").getBoundingClientRect();
        const texts = document.querySelectorAll(".ai-sidebar-message-assistant .ai-sidebar-text");
        const last = texts.length ? texts[texts.length - 1].getBoundingClientRect() : null;
        return {
            messagesHeight: Math.round(messages.height),
            sidebarHeight: Math.round(document.querySelector("#red-ui-sidebar").getBoundingClientRect().height),
            answerInView: !!last && last.bottom <= messages.bottom + 1 && last.bottom > messages.top
        };
    });
}

/** Start a new conversation with the header's "New chat" button. */
async function newChat(page) {
    await page.click(".ai-sidebar-new-chat");
}

/** Wait until no answer is streaming (the input is enabled again). */
async function waitIdle(page, timeout) {
    await page.waitForFunction(() => {
        const input = document.querySelector(".ai-sidebar-input");
        return input && !input.disabled && !document.querySelector(".ai-sidebar-cursor");
    }, null, { timeout: timeout || 30000 });
}

/** Type a question, send it, and wait for the whole answer. Returns the last answer's text. */
async function ask(page, question) {
    await waitIdle(page);
    await page.fill(".ai-sidebar-input", question);
    // The click handler disables the input before the click returns, so idle now means the answer ended.
    await page.click(".ai-sidebar-send");
    await waitIdle(page);
    return lastAnswerText(page);
}

async function lastAnswerText(page) {
    const answers = page.locator(".ai-sidebar-message-assistant");
    return (await answers.count()) ? (await answers.last().innerText()).trim() : "";
}

/**
 * The conversation as shown: [{role, text, badges, tools}] in order (`badges`: the tool chips of an answer restored
 * from a row stored without its events; `tools`: the labels of its tool cards, live or restored).
 */
async function transcript(page) {
    return page.evaluate(() => Array.from(document.querySelectorAll(".ai-sidebar-message")).map((el) => ({
        role: el.classList.contains("ai-sidebar-message-user") ? "user" : "assistant",
        text: Array.from(el.querySelectorAll(".ai-sidebar-text")).map((t) => t.innerText).join("\n").trim(),
        badges: Array.from(el.querySelectorAll(".ai-sidebar-badge")).map((b) => b.innerText.trim()),
        tools: Array.from(el.querySelectorAll(".ai-sidebar-tool-label")).map((b) => b.innerText.trim())
    })));
}

/** Save a screenshot of the page in OUT_DIR and list it in `result.screenshots`. */
async function screenshot(page, result, name) {
    const file = path.join(process.env.OUT_DIR, name);
    await page.screenshot({ path: file });
    result.screenshots = (result.screenshots || []).concat([file]);
    return file;
}

/** Save a screenshot of one part of the page (`locator`) in OUT_DIR and list it in `result.detailScreenshots`. */
async function detailScreenshot(locator, result, name) {
    const file = path.join(process.env.OUT_DIR, name);
    await locator.screenshot({ path: file });
    result.detailScreenshots = (result.detailScreenshots || []).concat([file]);
    return file;
}

/** The sidebar's width in CSS pixels. */
async function sidebarWidth(page) {
    return page.evaluate(() => Math.round(document.querySelector("#red-ui-sidebar").getBoundingClientRect().width));
}

/**
 * Drag the sidebar's separator, as a user does, until the sidebar is about `width` pixels wide (the editor keeps a
 * minimum); answers the width it has then. Node-RED 5 remembers the width in the user's settings, so a test that
 * narrows the sidebar sets it back to what it was before it ends.
 */
async function resizeSidebar(page, width) {
    const separator = await page.locator("#red-ui-sidebar-separator").boundingBox();
    const startX = separator.x + separator.width / 2;
    const y = separator.y + separator.height / 2;
    await page.mouse.move(startX, y);
    await page.mouse.down();
    await page.mouse.move(startX + (await sidebarWidth(page) - width), y, { steps: 10 });
    await page.mouse.up();
    // The editor sets the width on the drag's events. Node-RED 5 then keeps it in the user's settings
    // (editor.sidebar.state, RED.settings.set): posted 300 ms later (saveUserSettings), and a page closed before
    // that would open the next page of the same user at this width. Wait until the runtime holds what the page holds.
    await sidebarStateSaved(page);
    return sidebarWidth(page);
}

/**
 * Wait until the runtime's copy of the user's settings holds the sidebar state the page holds (Node-RED 5 keeps the
 * sidebar's width and sections there; 4.1 keeps none, and a user without settings.write keeps them in the page only).
 */
async function sidebarStateSaved(page) {
    const deadline = Date.now() + 30000;
    for (;;) {
        const saved = await page.evaluate(() => {
            const local = RED.settings.get("editor.sidebar.state");
            if (!local || !RED.user.hasPermission("settings.write")) {
                return true;
            }
            return new Promise((resolve) => {
                $.getJSON("settings/user").then((user) => {
                    const state = user && user.editor && user.editor.sidebar && user.editor.sidebar.state;
                    resolve(JSON.stringify(state) === JSON.stringify(local));
                }, () => resolve(false));
            });
        });
        if (saved) {
            return;
        }
        if (Date.now() > deadline) {
            throw new Error("the sidebar's state was not saved in the user's settings within 30 s");
        }
        await page.waitForTimeout(100);
    }
}

/** Wait until the clipboard holds a text (or cannot be read: the caller reports the error). */
async function clipboardFilled(page) {
    await page.waitForFunction(() => navigator.clipboard.readText().then((text) => text !== "", () => true), null,
        { timeout: 15000 });
}

/** The depth of the editor's undo history. */
async function historyDepth(page) {
    return page.evaluate(() => RED.history.depth());
}

/** Wait until the editor's undo history is `depth` deep (an edit pushed, or an undo popped). */
async function waitHistoryDepth(page, depth) {
    await page.waitForFunction((n) => RED.history.depth() === n, depth, { timeout: 15000 });
}

/** Wait until the nodes an import made follow the mouse (the view's import-dragging state). */
async function waitImportDragging(page) {
    await page.waitForFunction(() => RED.view.state() === RED.state.IMPORT_DRAGGING, null, { timeout: 15000 });
}

/** Wait until the nodes an import made follow the mouse were dropped: the view is back to its default state. */
async function waitImportPlaced(page) {
    await page.waitForFunction(() => RED.view.state() === RED.state.DEFAULT, null, { timeout: 15000 });
}

module.exports = { launch, runEditorScript, openEditor, login, editorReady, showTab, tabButton, tabButtonRow, sidebarLayout, newChat,
    waitIdle, ask, lastAnswerText, transcript, screenshot, detailScreenshot, sidebarWidth, resizeSidebar, sidebarStateSaved,
    pageTimers, clipboardFilled, historyDepth, waitHistoryDepth, waitImportDragging, waitImportPlaced };
