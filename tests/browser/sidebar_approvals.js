// Drives the approval card (issue 18) in headless Debian Chromium at 1280×720 and reports what the user saw as one
// JSON line on stdout.
// Input (env): EDITOR_URL, TAB_ID, MODE, OUT_DIR, USERNAME + PASSWORD (none: no adminAuth), QUESTION, and per mode
// EDITED_ARGS (edit), REASON (reject, restore), QUESTIONS (restore).
// Modes: approve (card, Approve, nodes on the tab undeployed, one Ctrl-Z; the card with a narrow sidebar too),
// locked (the open tab locked before Approve), locked-elsewhere (OTHER_TAB_ID locked, then a change asked for it),
// reject, edit, reload (the card comes back after a reload, Approve works), second (another browser context of the
// same user approves), restore (a reopened conversation shows its cards, sources and links as they were), follow
// (the card follows Ctrl-Z, Ctrl-Y and the user's edits; the total after approval; the line after reopening).
"use strict";
const editor = require("./editor");

const env = process.env;
const VIEWPORT = { width: 1280, height: 720 };

/** The tab's nodes (names), the undo depth and whether the Deploy button offers undeployed changes. */
async function canvasState(page, tabId) {
    return page.evaluate((id) => ({
        names: RED.nodes.filterNodes({ z: id }).map((n) => n.name || n.type).sort(),
        count: RED.nodes.filterNodes({ z: id }).length,
        historyDepth: RED.history.depth(),
        dirty: RED.nodes.dirty(),
        deployEnabled: !document.querySelector("#red-ui-header-button-deploy").classList.contains("disabled")
    }), tabId);
}

async function openPage(context, result) {
    const page = await editor.openEditor(context, env.EDITOR_URL, result,
        env.USERNAME ? { username: env.USERNAME, password: env.PASSWORD } : null);
    await editor.showTab(page, env.TAB_ID);
    return page;
}

/** Ask the question in a new chat and wait for `selector` (its card, a tool card) and the answer's end. */
async function askFor(page, selector) {
    await editor.newChat(page);
    await editor.waitIdle(page);
    await page.fill(".ai-sidebar-input", env.QUESTION);
    await page.click(".ai-sidebar-send");
    await page.waitForSelector(selector, { timeout: 30000 });
    await editor.waitIdle(page);
}

/** Ask the question and wait for its card. */
async function askForCard(page) {
    await askFor(page, ".ai-sidebar-approval");
}

async function cardView(page) {
    const card = page.locator(".ai-sidebar-approval").last();
    return {
        text: (await card.innerText()).trim(),
        buttons: (await card.locator(".ai-sidebar-approval-buttons button:visible").allInnerTexts())
            .map((text) => text.trim()),
        runId: await card.getAttribute("data-run-id"),
        fitsWidth: await card.evaluate((el) => el.scrollWidth <= el.clientWidth + 1 &&
            el.getBoundingClientRect().right <= document.querySelector("#red-ui-sidebar").getBoundingClientRect().right + 1)
    };
}

/** Click a card button and wait until the continued answer ended. */
async function decideAndWait(page, selector) {
    await page.locator(".ai-sidebar-approval").last().locator(selector).click();
    // The decision starts the resume stream at once; idle again means the continued answer ended.
    await page.waitForFunction(() => document.querySelector(".ai-sidebar-approval-sent"), null, { timeout: 10000 });
    await editor.waitIdle(page);
}

async function afterAnswer(page) {
    return {
        answer: await editor.lastAnswerText(page),
        applied: (await page.locator(".ai-sidebar-tool-applied").allInnerTexts()).map((text) => text.trim()),
        errors: (await page.locator(".ai-sidebar-message-assistant .ai-sidebar-error:visible").allInnerTexts())
            .map((text) => text.trim()),
        status: (await page.locator(".ai-sidebar-approval-status").last().innerText()).trim()
    };
}

async function approveMode(context, result) {
    const page = await openPage(context, result);
    await askForCard(page);
    result.card = await cardView(page);
    await editor.detailScreenshot(page.locator(".ai-sidebar-approval").last(), result, "sidebar-approval-card.png");
    await editor.screenshot(page, result, "sidebar-approval-card-page.png");
    // The same card in a narrow sidebar; the width is set back before the test goes on (Node-RED 5 keeps it).
    const width = await editor.sidebarWidth(page);
    result.width = width;
    result.narrowWidth = await editor.resizeSidebar(page, 240);
    result.narrowCard = await cardView(page);
    await editor.screenshot(page, result, "sidebar-approval-card-narrow.png");
    result.restoredWidth = await editor.resizeSidebar(page, width);
    result.before = await canvasState(page, env.TAB_ID);
    await decideAndWait(page, ".ai-sidebar-approval-approve");
    result.after = await canvasState(page, env.TAB_ID);
    Object.assign(result, await afterAnswer(page));
    await editor.screenshot(page, result, "sidebar-approval-applied.png");
    // A click on an empty spot of the canvas, as a user would, so that Ctrl-Z reaches the editor's undo.
    const chart = await page.locator("#red-ui-workspace-chart").boundingBox();
    await page.mouse.click(chart.x + 15, chart.y + chart.height - 30);
    const depth = await editor.historyDepth(page);
    await page.keyboard.press("Control+z");
    await editor.waitHistoryDepth(page, depth - 1);
    result.undone = await canvasState(page, env.TAB_ID);
}

async function lockedMode(context, result) {
    // A card for the open tab; the user locks the tab (the editor's own action) and then approves.
    const page = await openPage(context, result);
    await askForCard(page);
    result.before = await canvasState(page, env.TAB_ID);
    await page.evaluate(() => RED.actions.invoke("core:lock-flow"));
    result.locked = await page.evaluate((id) => !!RED.nodes.workspace(id).locked, env.TAB_ID);
    await decideAndWait(page, ".ai-sidebar-approval-approve");
    result.after = await canvasState(page, env.TAB_ID);
    Object.assign(result, await afterAnswer(page));
    result.toolCard = await page.evaluate(() => {
        const cards = document.querySelectorAll(".ai-sidebar-tool");
        const card = cards[cards.length - 1];
        return { failed: card.classList.contains("ai-sidebar-tool-failed"),
            label: card.querySelector(".ai-sidebar-tool-label").innerText.trim() };
    });
    await editor.screenshot(page, result, "sidebar-approval-locked.png");
    await page.evaluate(() => RED.actions.invoke("core:unlock-flow"));
}

async function lockedElsewhereMode(context, result) {
    // The user locks another tab in the editor (not deployed), comes back and asks for a change on that tab: the
    // service hears of the lock (lockedFlows) and refuses before any card.
    const page = await openPage(context, result);
    await editor.showTab(page, env.OTHER_TAB_ID);
    await page.evaluate(() => RED.actions.invoke("core:lock-flow"));
    await editor.showTab(page, env.TAB_ID);
    result.otherLocked = await page.evaluate((id) => !!RED.nodes.workspace(id).locked, env.OTHER_TAB_ID);
    await askFor(page, ".ai-sidebar-message-assistant .ai-sidebar-tool");
    result.cards = await page.locator(".ai-sidebar-approval").count();
    result.toolCard = await page.evaluate(() => {
        const cards = document.querySelectorAll(".ai-sidebar-tool");
        const card = cards[cards.length - 1];
        return { failed: card.classList.contains("ai-sidebar-tool-failed"),
            label: card.querySelector(".ai-sidebar-tool-label").innerText.trim(), text: card.innerText };
    });
    result.answer = await editor.lastAnswerText(page);
    await editor.screenshot(page, result, "sidebar-approval-locked-elsewhere.png");
}

async function rejectMode(context, result) {
    const page = await openPage(context, result);
    await askForCard(page);
    result.before = await canvasState(page, env.TAB_ID);
    await page.locator(".ai-sidebar-approval").last().locator(".ai-sidebar-approval-reject").click();
    // What the user sees right after the click, before anything else scrolls: the reason field and its buttons
    // inside the message list's visible part, the field focused.
    result.rejectOpen = await page.evaluate(() => {
        const list = document.querySelector(".ai-sidebar-messages").getBoundingClientRect();
        const cards = document.querySelectorAll(".ai-sidebar-approval");
        const card = cards[cards.length - 1];
        function inView(selector) {
            const box = card.querySelector(selector).getBoundingClientRect();
            return box.height > 0 && box.top >= list.top - 1 && box.bottom <= list.bottom + 1;
        }
        return {
            reasonInView: inView(".ai-sidebar-approval-reason"),
            confirmInView: inView(".ai-sidebar-approval-confirm-reject"),
            cancelInView: inView(".ai-sidebar-approval-cancel-reject"),
            reasonFocused: document.activeElement === card.querySelector(".ai-sidebar-approval-reason")
        };
    });
    await editor.screenshot(page, result, "sidebar-approval-reject-open.png");
    await page.fill(".ai-sidebar-approval-reason", env.REASON);
    await editor.detailScreenshot(page.locator(".ai-sidebar-approval").last(), result, "sidebar-approval-reject.png");
    await decideAndWait(page, ".ai-sidebar-approval-confirm-reject");
    result.after = await canvasState(page, env.TAB_ID);
    Object.assign(result, await afterAnswer(page));
}

async function editMode(context, result) {
    const page = await openPage(context, result);
    await askForCard(page);
    result.before = await canvasState(page, env.TAB_ID);
    const card = page.locator(".ai-sidebar-approval").last();
    await card.locator(".ai-sidebar-approval-edit").click();
    result.shownArgs = JSON.parse(await card.locator(".ai-sidebar-approval-args").inputValue());
    await card.locator(".ai-sidebar-approval-args").fill("{\"nodes\": [");
    await card.locator(".ai-sidebar-approval-use-edited").click();
    result.invalidMessage = (await card.locator(".ai-sidebar-approval-edit-error").innerText()).trim();
    result.sentWhileInvalid = await page.locator(".ai-sidebar-approval-sent").count();
    await card.locator(".ai-sidebar-approval-args").fill(env.EDITED_ARGS);
    await editor.detailScreenshot(card, result, "sidebar-approval-edit.png");
    await decideAndWait(page, ".ai-sidebar-approval-use-edited");
    result.after = await canvasState(page, env.TAB_ID);
    Object.assign(result, await afterAnswer(page));
}

async function reloadMode(context, result) {
    const page = await openPage(context, result);
    await askForCard(page);
    result.card = await cardView(page);
    await page.reload({ waitUntil: "domcontentloaded" });
    await editor.editorReady(page);
    await editor.showTab(page, env.TAB_ID);
    await page.waitForSelector(".ai-sidebar-approval", { timeout: 30000 });
    result.reloadedCard = await cardView(page);
    result.restoredNote = (await page.locator(".ai-sidebar-message-assistant").last()
        .locator(".ai-sidebar-note").first().innerText()).trim();
    await editor.screenshot(page, result, "sidebar-approval-reloaded.png");
    result.before = await canvasState(page, env.TAB_ID);
    await decideAndWait(page, ".ai-sidebar-approval-approve");
    result.after = await canvasState(page, env.TAB_ID);
    Object.assign(result, await afterAnswer(page));
}

async function secondMode(browser, context, result) {
    const page = await openPage(context, result);
    await askForCard(page);
    result.card = await cardView(page);
    // Another browser profile of the same Node-RED user: its own login, no token of this run in its storage.
    const other = await browser.newContext({ viewport: VIEWPORT });
    const second = await openPage(other, result);
    // There it is another conversation until the user opens this one from the session list.
    await second.click(".ai-sidebar-session-button");
    await second.locator(".ai-sidebar-session[data-session-id]", { hasText: env.QUESTION }).first()
        .locator(".ai-sidebar-session-main").click();
    await second.waitForSelector(".ai-sidebar-approval", { timeout: 30000 });
    result.secondCard = await cardView(second);
    result.secondStoredTokens = await second.evaluate(() => Object.keys(window.localStorage)
        .filter((key) => key.indexOf("ai-sidebar-approval-token") === 0).length);
    result.before = await canvasState(second, env.TAB_ID);
    await decideAndWait(second, ".ai-sidebar-approval-approve");
    result.after = await canvasState(second, env.TAB_ID);
    Object.assign(result, await afterAnswer(second));
    await editor.screenshot(second, result, "sidebar-approval-second-browser.png");
    // The first browser's token was replaced: its Approve now gets a fresh one, and the run is answered already.
    await decideAndWait(page, ".ai-sidebar-approval-approve");
    result.firstAfterSecond = await afterAnswer(page);
    await other.close();
}

/**
 * What the conversation shows, answer by answer: its text blocks, tool cards (label, failed), source links, node
 * links, approval cards (run, per action the pressed button and the decision said, whether it can still be
 * answered, the status line), the editor's applied lines and error lines.
 */
async function conversationView(page) {
    return page.evaluate(() => Array.from(document.querySelectorAll(".ai-sidebar-message-assistant")).map((el) => {
        const texts = (selector) => Array.from(el.querySelectorAll(selector)).map((e) => e.innerText.trim());
        return {
            text: texts(".ai-sidebar-text").join("\n"),
            tools: Array.from(el.querySelectorAll(".ai-sidebar-tool")).map((card) => ({
                label: card.querySelector(".ai-sidebar-tool-label").innerText.trim(),
                failed: card.classList.contains("ai-sidebar-tool-failed")
            })),
            sources: texts(".ai-sidebar-sources .ai-sidebar-source"),
            links: Array.from(el.querySelectorAll(".ai-sidebar-text .ai-sidebar-node-link"))
                .map((a) => [a.innerText.trim(), a.getAttribute("data-node-id")]),
            cards: Array.from(el.querySelectorAll(".ai-sidebar-approval")).map((card) => ({
                runId: card.getAttribute("data-run-id"),
                summaries: Array.from(card.querySelectorAll(".ai-sidebar-approval-summary"))
                    .map((e) => e.innerText.trim()),
                pressed: Array.from(card.querySelectorAll(".ai-sidebar-approval-buttons button.selected"))
                    .map((b) => b.innerText.trim()),
                decided: Array.from(card.querySelectorAll(".ai-sidebar-approval-decided"))
                    .filter((e) => e.offsetParent).map((e) => e.innerText.trim()),
                answerable: !!card.querySelector(".ai-sidebar-approval-approve:not([disabled])"),
                status: card.querySelector(".ai-sidebar-approval-status").innerText.trim()
            })),
            applied: texts(".ai-sidebar-tool-applied"),
            errors: texts(".ai-sidebar-error")
        };
    }));
}

/**
 * One conversation with a docs question (sources, node links), a change approved (applied in the editor), one
 * rejected with REASON, and one left waiting; then the editor is opened again and the conversation opened from
 * the session list: the view is read before and after, and the waiting change is approved there. Env: QUESTIONS
 * (the docs question, then three asking for changes).
 */
async function restoreMode(context, result) {
    const questions = JSON.parse(env.QUESTIONS);
    let page = await openPage(context, result);
    await editor.newChat(page);
    await editor.ask(page, questions[0]);
    await page.fill(".ai-sidebar-input", questions[1]);
    await page.click(".ai-sidebar-send");
    await page.waitForSelector(".ai-sidebar-approval", { timeout: 30000 });
    await editor.waitIdle(page);
    await decideAndWait(page, ".ai-sidebar-approval-approve");
    await page.fill(".ai-sidebar-input", questions[2]);
    await page.click(".ai-sidebar-send");
    await page.waitForFunction(() => document.querySelectorAll(".ai-sidebar-approval").length === 2, null,
        { timeout: 30000 });
    await editor.waitIdle(page);
    const second = page.locator(".ai-sidebar-approval").last();
    await second.locator(".ai-sidebar-approval-reject").click();
    await second.locator(".ai-sidebar-approval-reason").fill(env.REASON);
    await second.locator(".ai-sidebar-approval-confirm-reject").click();
    await page.waitForFunction(() => document.querySelectorAll(".ai-sidebar-approval-sent").length === 2, null,
        { timeout: 10000 });
    await editor.waitIdle(page);
    await page.fill(".ai-sidebar-input", questions[3]);
    await page.click(".ai-sidebar-send");
    await page.waitForFunction(() => document.querySelectorAll(".ai-sidebar-approval").length === 3, null,
        { timeout: 30000 });
    await editor.waitIdle(page);
    result.live = await conversationView(page);
    await editor.screenshot(page, result, "sidebar-restore-live.png");

    // The approved change waits undeployed, so the editor would ask before a reload: the tab is closed and the
    // editor opened again in the same browser profile instead.
    await page.close();
    page = await openPage(context, result);
    // The sidebar brings the conversation back by itself as the editor loads (before the editor has its flows).
    await page.waitForFunction(() => document.querySelectorAll(".ai-sidebar-approval").length === 3, null,
        { timeout: 30000 });
    await editor.waitIdle(page);
    result.restoredOnLoad = await conversationView(page);
    // Opened again from the session list, as a user reopens a conversation.
    await editor.newChat(page);
    await page.click(".ai-sidebar-session-button");
    await page.locator(".ai-sidebar-session[data-session-id]", { hasText: questions[0] }).first()
        .locator(".ai-sidebar-session-main").click();
    await page.waitForFunction(() => document.querySelectorAll(".ai-sidebar-approval").length === 3, null,
        { timeout: 30000 });
    await editor.waitIdle(page);
    result.restored = await conversationView(page);
    result.waitingNote = (await page.locator(".ai-sidebar-approval").last().evaluate((card) =>
        card.previousElementSibling && card.previousElementSibling.innerText) || "").trim();
    await editor.screenshot(page, result, "sidebar-restore-reopened.png");
    for (const [index, name] of [[0, "sidebar-restore-approved.png"], [1, "sidebar-restore-rejected.png"]]) {
        await editor.detailScreenshot(page.locator(".ai-sidebar-approval").nth(index), result, name);
    }
    result.before = await canvasState(page, env.TAB_ID);
    await page.locator(".ai-sidebar-approval").last().locator(".ai-sidebar-approval-approve").click();
    await page.waitForFunction(() => document.querySelectorAll(".ai-sidebar-approval-sent").length === 3, null,
        { timeout: 10000 });
    await editor.waitIdle(page);
    result.after = await canvasState(page, env.TAB_ID);
    result.afterApprove = await conversationView(page);
    result.waitingAfterApprove = await page.locator(".ai-sidebar-approval-waiting:visible").count();
    await editor.screenshot(page, result, "sidebar-restore-approved-after-reload.png");
}

/** The applied line of the change (its state and text), as the tool card shows it. */
async function appliedLine(page) {
    return page.evaluate(() => {
        const lines = document.querySelectorAll(".ai-sidebar-tool-applied");
        const line = lines[lines.length - 1];
        return line ? { state: line.getAttribute("data-state"), text: line.innerText.trim(), count: lines.length }
            : null;
    });
}

/** Wait until the applied line says `state` (or 10 s: what it says then is reported). */
async function lineBecomes(page, state) {
    await page.waitForFunction((wanted) => {
        const lines = document.querySelectorAll(".ai-sidebar-tool-applied");
        return lines.length && lines[lines.length - 1].getAttribute("data-state") === wanted;
    }, state, { timeout: 10000 }).catch(() => null);
    return appliedLine(page);
}

/** The conversation's total in the header, as shown. */
async function sessionTotal(page) {
    return page.evaluate(() => {
        const element = document.querySelector(".ai-sidebar-session-usage");
        return element && element.offsetParent ? { text: element.innerText.trim(),
            sessionId: element.getAttribute("data-session-id") } : null;
    });
}

/** Press a key on the canvas, as a user would after clicking an empty spot of it. */
async function keyOnCanvas(page, key) {
    const chart = await page.locator("#red-ui-workspace-chart").boundingBox();
    await page.mouse.click(chart.x + 15, chart.y + chart.height - 30);
    await page.keyboard.press(key);
}

/** A report of the line's new state reaching the service (through the plugin) before `action` returns. */
async function reported(page, state, action) {
    const posted = page.waitForResponse((response) => response.url().includes("/applied") &&
        (response.request().postData() || "").includes("\"later\":\"" + state + "\""), { timeout: 10000 })
        .catch(() => null);
    await action();
    const response = await posted;
    return response ? response.status() : null;
}

/**
 * The card and its line follow the editor (issue 31): the conversation's total right after the approved run,
 * then Ctrl-Z (undone), Ctrl-Y (applied again), the user renaming an applied node as the edit dialog does (changed
 * since), Ctrl-Z of that (applied), Ctrl-Z (undone); then the editor opened again shows the conversation with its
 * tool cards, answer usage and the line as it was left, and Regenerate under its last answer asks again.
 */
async function followMode(context, result) {
    let page = await openPage(context, result);
    await askForCard(page);
    await page.waitForSelector(".ai-sidebar-session-usage", { state: "visible", timeout: 10000 }).catch(() => null);
    result.totalWithCard = await sessionTotal(page);
    await decideAndWait(page, ".ai-sidebar-approval-approve");
    await page.waitForFunction((before) => {
        const element = document.querySelector(".ai-sidebar-session-usage");
        return element && element.innerText.trim() !== before;
    }, (result.totalWithCard || {}).text, { timeout: 10000 }).catch(() => null);
    result.totalAfterApproval = await sessionTotal(page);
    // What the service counted for the conversation by then, read through the plugin as the sidebar reads it.
    result.serviceTotals = await page.evaluate((sessionId) => window.NodeRedAiSidebar.adminApi.requestJson("GET",
        window.NodeRedAiSidebar.usage.sessionQuery(sessionId)), (result.totalAfterApproval || {}).sessionId || "");
    result.applied = await appliedLine(page);
    result.undoneReport = await reported(page, "undone", () => keyOnCanvas(page, "Control+z"));
    result.undone = await lineBecomes(page, "undone");
    result.undoneCanvas = await canvasState(page, env.TAB_ID);
    await editor.detailScreenshot(page.locator(".ai-sidebar-message-assistant").last(), result,
        "sidebar-approval-undone.png");
    await keyOnCanvas(page, "Control+y");
    result.redone = await lineBecomes(page, "applied");
    result.redoneCanvas = await canvasState(page, env.TAB_ID);
    // The user renames an applied node, as the edit dialog does: one edit in the undo history.
    await page.evaluate((tabId) => {
        const node = RED.nodes.filterNodes({ z: tabId }).filter((n) => n.name === "ai-tick")[0];
        RED.history.push({ t: "edit", node: node, changes: { name: node.name }, changed: node.changed,
            dirty: RED.nodes.dirty() });
        node.name = "my-tick";
        node.changed = true;
        node.dirty = true;
        RED.nodes.dirty(true);
        RED.view.redraw();
    }, env.TAB_ID);
    result.changed = await lineBecomes(page, "changed");
    await editor.detailScreenshot(page.locator(".ai-sidebar-message-assistant").last(), result,
        "sidebar-approval-changed.png");
    await keyOnCanvas(page, "Control+z");
    result.renameUndone = await lineBecomes(page, "applied");
    result.lastReport = await reported(page, "undone", () => keyOnCanvas(page, "Control+z"));
    result.undoneAgain = await lineBecomes(page, "undone");
    result.live = await conversationView(page);
    result.liveUsage = await page.locator(".ai-sidebar-message-assistant .ai-sidebar-usage").count();
    // Opened again in the same browser profile: the sidebar brings the conversation back by itself.
    await page.close();
    page = await openPage(context, result);
    await page.waitForSelector(".ai-sidebar-tool-applied", { timeout: 30000 });
    await editor.waitIdle(page);
    result.reopened = await conversationView(page);
    result.reopenedLine = await appliedLine(page);
    result.reopenedUsage = await page.locator(".ai-sidebar-message-assistant .ai-sidebar-usage").count();
    result.reopenedTotal = await sessionTotal(page);
    await editor.screenshot(page, result, "sidebar-approval-reopened-undone.png");
    // Regenerate under the restored last answer sends its question again.
    result.reopenedRegenerate = await page.locator(".ai-sidebar-regenerate").count();
    const questions = await page.locator(".ai-sidebar-message-user").count();
    await page.locator(".ai-sidebar-regenerate").last().click();
    await page.waitForFunction((count) => document.querySelectorAll(".ai-sidebar-message-user").length > count,
        questions, { timeout: 10000 });
    await editor.waitIdle(page);
    result.regenerated = await editor.transcript(page);
}

async function main() {
    const result = {};
    const { browser, context } = await editor.launch(VIEWPORT);
    try {
        if (env.MODE === "approve") await approveMode(context, result);
        else if (env.MODE === "reject") await rejectMode(context, result);
        else if (env.MODE === "locked") await lockedMode(context, result);
        else if (env.MODE === "locked-elsewhere") await lockedElsewhereMode(context, result);
        else if (env.MODE === "edit") await editMode(context, result);
        else if (env.MODE === "reload") await reloadMode(context, result);
        else if (env.MODE === "second") await secondMode(browser, context, result);
        else if (env.MODE === "restore") await restoreMode(context, result);
        else if (env.MODE === "follow") await followMode(context, result);
        else throw new Error("unknown MODE " + env.MODE);
    } catch (err) {
        result.failure = String(err && err.stack || err);
    } finally {
        await browser.close();
    }
    process.stdout.write(JSON.stringify(result) + "\n");
}

main();
