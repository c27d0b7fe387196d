// Browser modes run by sidebar_features.js (same input and output) for issue 13's sidebar items: importing a flow
// whose config node the workspace has already (re-used, or the user asked), the waiting line before the first
// token, and what tool cards say about who started a tool and why it failed.
// Modes: config-import, waiting, tool-cards.
"use strict";
const editor = require("./editor");

const env = process.env;

async function notifications(page) {
    return page.evaluate(() => Array.from(document.querySelectorAll("#red-ui-notifications .red-ui-notification"))
        .map((n) => n.innerText.trim()));
}

/** The workspace's mqtt-broker config nodes and the `mqtt in` nodes of a tab, with what each points at. */
async function mqttState(page, tabId) {
    return page.evaluate((id) => {
        const brokers = [];
        RED.nodes.eachConfig((node) => {
            if (node.type === "mqtt-broker") {
                brokers.push({ id: node.id, name: node.name, broker: node.broker, users: node.users.length });
            }
        });
        return {
            brokers: brokers,
            inputs: RED.nodes.filterNodes({ z: id, type: "mqtt in" }).map((n) => ({ id: n.id, broker: n.broker })),
            nodes: RED.nodes.filterNodes({ z: id }).length,
            historyDepth: RED.history.depth()
        };
    }, tabId);
}

/** Click in the workspace to drop the nodes that follow the mouse after an import, as a user does. */
async function placeImported(page, across, down) {
    await editor.waitImportDragging(page);
    const chart = await page.locator("#red-ui-workspace-chart").boundingBox();
    const x = chart.x + chart.width * across;
    const y = chart.y + chart.height * down;
    await page.mouse.move(x - 30, y - 30);
    await page.mouse.move(x, y, { steps: 5 });
    await page.mouse.click(x, y);
    await editor.waitImportPlaced(page);
}

/** The open config-node dialog: its text, and for each row the label and the options offered. */
async function configDialog(page) {
    return page.evaluate(() => {
        const dialog = document.querySelector(".ai-sidebar-config-choice");
        if (!dialog) return null;
        return {
            text: dialog.innerText.trim(),
            rows: Array.from(dialog.querySelectorAll(".ai-sidebar-config-choice-row")).map((row) => ({
                label: row.querySelector("label").innerText.trim(),
                labelFor: row.querySelector("label").getAttribute("for") === row.querySelector("select").id,
                options: Array.from(row.querySelectorAll("option")).map((o) => ({ value: o.value, text: o.text })),
                selected: row.querySelector("select").value
            })),
            buttons: Array.from(dialog.parentElement.querySelectorAll(".ui-dialog-buttonset button"))
                .map((b) => b.innerText.trim()),
            modal: getComputedStyle(document.getElementById("red-ui-full-shade")).display !== "none"
        };
    });
}

async function closeNotifications(page) {
    await page.evaluate(() => document.querySelectorAll("#red-ui-notifications .red-ui-notification")
        .forEach((n) => n.close && n.close()));
    await page.waitForFunction(() => !document.querySelector("#red-ui-notifications .red-ui-notification"), null,
        { timeout: 15000 });
}

// The same answer imported twice re-uses the broker of the first import; a broker that differs from the
// workspace's is the user's choice (add it, or use an existing one), and Cancel imports nothing.
async function configImportMode(page, result) {
    await editor.showTab(page, env.TAB_ID);
    await editor.newChat(page);
    await editor.ask(page, "Give me a flow that reads the greenhouse sensors over MQTT");
    result.start = await mqttState(page, env.TAB_ID);

    // First import: the answer's broker differs from the workspace's "Local broker", so the user is asked.
    await page.locator(".ai-sidebar-flow-import").last().click();
    await page.waitForSelector(".ai-sidebar-config-choice", { timeout: 5000 });
    result.firstDialog = await configDialog(page);
    await editor.screenshot(page, result, "sidebar-config-import-ask.png");
    result.stateWhileAsked = await mqttState(page, env.TAB_ID);
    await page.click(".ai-sidebar-config-choice-import");
    await placeImported(page, 0.3, 0.6);
    result.afterFirst = await mqttState(page, env.TAB_ID);
    result.firstNotifications = await notifications(page);
    await closeNotifications(page);

    // The same answer again: its broker is the one the first import added, so that one is used, unasked.
    await page.locator(".ai-sidebar-flow-import").last().click();
    // Unasked: the import goes on at once (its nodes follow the mouse), with no dialog shown.
    await editor.waitImportDragging(page);
    result.secondDialog = await configDialog(page);
    await placeImported(page, 0.6, 0.75);
    result.afterSecond = await mqttState(page, env.TAB_ID);
    result.secondNotifications = await notifications(page);
    await editor.screenshot(page, result, "sidebar-config-import-reused.png");
    await closeNotifications(page);

    // Another answer with another broker: Cancel imports nothing; then "use the existing Local broker".
    await editor.ask(page, "And one that reads from the cloud broker?");
    await page.locator(".ai-sidebar-flow-import").last().click();
    await page.waitForSelector(".ai-sidebar-config-choice", { timeout: 5000 });
    result.thirdDialog = await configDialog(page);
    await page.click(".ai-sidebar-config-choice-cancel");
    await page.waitForSelector(".ai-sidebar-config-choice", { state: "hidden", timeout: 15000 });
    // A duration stays: Cancel must import nothing, which no event announces (the dialog's close is waited for).
    await page.waitForTimeout(500);
    result.afterCancel = await mqttState(page, env.TAB_ID);
    result.viewStateAfterCancel = await page.evaluate(() => RED.view.state());
    await page.locator(".ai-sidebar-flow-import").last().click();
    await page.waitForSelector(".ai-sidebar-config-choice", { timeout: 5000 });
    await page.selectOption(".ai-sidebar-config-choice select", env.LOCAL_BROKER_ID);
    await page.click(".ai-sidebar-config-choice-import");
    await placeImported(page, 0.3, 0.9);
    result.afterChoosingExisting = await mqttState(page, env.TAB_ID);
    result.lastNotifications = await notifications(page);
}

/**
 * From now on, everything the last answer shows while it waits: each waiting text and announcement put into the
 * page (MutationObserver records every change, also ones replaced within the same task) and a snapshot per change.
 */
async function watchWaiting(page) {
    await page.evaluate(() => {
        const log = { labels: [], announced: [], snapshots: [], start: performance.now() };
        window.__aiWaitLog = log;
        const messages = document.querySelector(".ai-sidebar-messages");
        new MutationObserver((records) => {
            records.forEach((record) => record.addedNodes.forEach((node) => {
                // A text node replaced within the same task has no parent any more; the record keeps it.
                const parent = node.nodeType === Node.TEXT_NODE ? record.target : node;
                if (!parent.classList) return;
                // The line gets its first words before it is added to the answer.
                const label = parent.classList.contains("ai-sidebar-waiting") ?
                    parent.querySelector(".ai-sidebar-waiting-text") : parent;
                const text = node.nodeType === Node.TEXT_NODE ? node.textContent : label.textContent;
                if (label.classList.contains("ai-sidebar-waiting-text")) {
                    if (log.labels.slice(-1)[0] !== text) log.labels.push(text);
                } else if (parent.classList.contains("ai-sidebar-waiting-status") && text) {
                    log.announced.push(text);
                }
            }));
            const answers = document.querySelectorAll(".ai-sidebar-message-assistant");
            const answer = answers[answers.length - 1];
            if (!answer) return;
            const line = answer.querySelector(".ai-sidebar-waiting");
            log.snapshots.push({
                at: Math.round(performance.now() - log.start),
                waiting: line ? line.innerText.trim() : null,
                lastChild: line ? answer.lastElementChild === line : null,
                text: Array.from(answer.querySelectorAll(".ai-sidebar-text")).map((t) => t.innerText).join("").trim(),
                errors: answer.querySelectorAll(".ai-sidebar-error").length,
                dot: getComputedStyle(answer, "::after").content
            });
        }).observe(messages, { childList: true, subtree: true, characterData: true });
    });
}

async function waitingLog(page) {
    return page.evaluate(() => {
        const log = window.__aiWaitLog;
        window.__aiWaitLog = null;
        return log;
    });
}

/** The waiting line and live region of the last answer as they are now. */
async function waitingNow(page) {
    return page.evaluate(() => {
        const answers = document.querySelectorAll(".ai-sidebar-message-assistant");
        const answer = answers[answers.length - 1];
        const line = answer.querySelector(".ai-sidebar-waiting");
        const status = answer.querySelector("[role=status]");
        return {
            line: line ? line.innerText.trim() : null,
            lineHidden: line ? line.getAttribute("aria-hidden") : null,
            status: status ? { text: status.textContent, live: status.getAttribute("aria-live"),
                visible: status.getBoundingClientRect().width > 1 } : null,
            dot: getComputedStyle(answer, "::after").content
        };
    });
}

/** The SSE events of every stream-chat answer the page receives, in order (to compare the cards with). */
function recordStreams(page) {
    const streams = [];
    page.on("response", (response) => {
        if (response.url().endsWith("ai-sidebar/stream-chat")) {
            streams.push(response.text().then((body) => body.split("\n\n")
                .filter((frame) => frame.startsWith("data: "))
                .map((frame) => JSON.parse(frame.slice(6))), (err) => String(err)));
        }
    });
    return streams;
}

/** The tool cards of the last answer as the user sees them, without opening them. */
async function toolCards(page) {
    return page.evaluate(() => {
        const answers = document.querySelectorAll(".ai-sidebar-message-assistant");
        const answer = answers[answers.length - 1];
        return Array.from(answer.querySelectorAll(".ai-sidebar-tool")).map((card) => {
            const origin = card.querySelector(".ai-sidebar-tool-origin");
            const failure = card.querySelector(".ai-sidebar-tool-failure");
            return {
                label: card.querySelector(".ai-sidebar-tool-label").innerText.trim(),
                origin: origin ? origin.innerText.trim() : null,
                originAttribute: card.getAttribute("data-origin"),
                originTooltip: origin ? origin.getAttribute("title") : null,
                failure: failure ? failure.innerText.trim() : null,
                failureVisible: !!failure && failure.getBoundingClientRect().height > 0,
                open: card.open,
                failed: card.classList.contains("ai-sidebar-tool-failed"),
                sections: Array.from(card.querySelectorAll(".ai-sidebar-tool-section-label"))
                    .map((label) => label.textContent.trim())
            };
        });
    });
}

// A slow model: until its first token the answer says what it waits for with the seconds waited (the model, then
// the tool it called, then the model again), politely announced; the line goes at the first token, and at an error.
async function waitingMode(page, result) {
    const streams = recordStreams(page);
    await editor.showTab(page, env.TAB_ID);
    await editor.newChat(page);
    await editor.waitIdle(page);
    await watchWaiting(page);
    await page.fill(".ai-sidebar-input", env.QUESTION);
    await page.click(".ai-sidebar-send");
    // Two seconds into the wait for the model.
    await page.waitForFunction(() => {
        const time = document.querySelector(".ai-sidebar-waiting-time");
        return time && /^[2-9]/.test(time.innerText.trim());
    }, null, { timeout: 15000 });
    result.during = await waitingNow(page);
    await editor.screenshot(page, result, "sidebar-waiting-for-model.png");
    await editor.detailScreenshot(page.locator(".ai-sidebar-message-assistant").last(), result,
        "sidebar-waiting-for-model-answer.png");
    // The second wait for the model, after the tool.
    await page.waitForSelector(".ai-sidebar-tool-failed", { timeout: 20000 });
    // Waiting for the model again for a second or more (or already answering).
    await page.waitForFunction(() => {
        const answers = document.querySelectorAll(".ai-sidebar-message-assistant");
        const line = answers[answers.length - 1].querySelector(".ai-sidebar-waiting");
        return !line || /Waiting for the model.* [1-9]\d* s$/.test(line.innerText.trim());
    }, null, { timeout: 30000 });
    result.afterTool = await waitingNow(page);
    await editor.detailScreenshot(page.locator(".ai-sidebar-message-assistant").last(), result,
        "sidebar-waiting-after-tool.png");
    await editor.waitIdle(page, 30000);
    result.log = await waitingLog(page);
    result.after = await waitingNow(page);
    result.cards = await toolCards(page);
    await editor.detailScreenshot(page.locator(".ai-sidebar-message-assistant").last(), result,
        "sidebar-tool-failed-card.png");

    // An answer that fails before any text: the line goes with the error.
    await watchWaiting(page);
    await page.fill(".ai-sidebar-input", env.FAILING_QUESTION);
    await page.click(".ai-sidebar-send");
    await editor.waitIdle(page, 30000);
    result.failedLog = await waitingLog(page);
    result.failedAfter = await waitingNow(page);
    result.events = await Promise.all(streams);
}

// Tool cards for each `origin` of the contract (and none, as older services send), with failures: the service's
// stream is replaced by the contract's events (EVENTS), everything in the editor is real.
async function toolCardsMode(page, result) {
    await page.route("**/ai-sidebar/stream-chat", (route) => route.fulfill({
        status: 200,
        headers: { "Content-Type": "text/event-stream" },
        body: JSON.parse(env.EVENTS).map((event) => "data: " + JSON.stringify(event) + "\n\n").join("")
    }));
    await editor.showTab(page, env.TAB_ID);
    await editor.newChat(page);
    await editor.ask(page, env.QUESTION);
    result.cards = await toolCards(page);
    const answer = page.locator(".ai-sidebar-message-assistant").last();
    await answer.evaluate((el) => el.scrollIntoView());
    await editor.detailScreenshot(answer, result, "sidebar-tool-card-origins.png");
}

module.exports = {
    MODES: {
        "config-import": configImportMode,
        "waiting": waitingMode,
        "tool-cards": toolCardsMode
    }
};
