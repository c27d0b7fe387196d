// Drives the AI sidebar in headless Debian Chromium through one feature, chosen by MODE, and reports what the
// user saw as one JSON line on stdout (progress lines before it are JSON too, with a "stage" field).
// Input (env): EDITOR_URL, TAB_ID, MODE, OUT_DIR, optionally USERNAME + PASSWORD (adminAuth), QUESTION(S).
// Modes: import, unknown-types, sessions, inert-html, explain, context, offline, configs, highlight, and those of
// sidebar_conversation.js, sidebar_import_wait.js, sidebar_code_blocks.js,
// sidebar_recovery.js, sidebar_a11y.js, sidebar_context_seen.js, sidebar_round2.js and sidebar_panel.js.
"use strict";
const path = require("path");
const editor = require("./editor");

const env = process.env;

function stage(name, data) {
    process.stdout.write(JSON.stringify(Object.assign({ stage: name }, data || {})) + "\n");
}

const screenshot = editor.screenshot;

/** Names and ids of the nodes on a workspace tab, and the depth of the undo history. */
async function canvasState(page, tabId) {
    return page.evaluate((id) => ({
        names: RED.nodes.filterNodes({ z: id }).map((n) => n.name || "").filter(Boolean).sort(),
        count: RED.nodes.filterNodes({ z: id }).length,
        historyDepth: RED.history.depth()
    }), tabId);
}

async function notifications(page) {
    return page.evaluate(() => Array.from(document.querySelectorAll("#red-ui-notifications .red-ui-notification"))
        .map((n) => n.innerText.trim()));
}

// (a) An answer's flow is imported into the open tab, placed with a click, and one Ctrl-Z removes it all.
async function importMode(page, result) {
    await editor.showTab(page, env.TAB_ID);
    await editor.newChat(page);
    result.answer = await editor.ask(page, env.QUESTION);
    result.importButtons = await page.locator(".ai-sidebar-flow-import").count();
    result.copyButtons = await page.locator(".ai-sidebar-flow-copy").count();
    result.before = await canvasState(page, env.TAB_ID);
    await page.click(".ai-sidebar-flow-import");
    // Like Node-RED's own import, the nodes follow the mouse until a click on the workspace places them.
    await editor.waitImportDragging(page);
    const chart = await page.locator("#red-ui-workspace-chart").boundingBox();
    const x = chart.x + chart.width * 0.55;
    const y = chart.y + chart.height * 0.7;
    await page.mouse.move(x - 40, y - 40);
    await page.mouse.move(x, y, { steps: 5 });
    await page.mouse.click(x, y);
    await editor.waitImportPlaced(page);
    result.notifications = await notifications(page);
    result.imported = await canvasState(page, env.TAB_ID);
    result.viewState = await page.evaluate(() => RED.view.state());
    await screenshot(page, result, "sidebar-flow-imported.png");
    await page.keyboard.press("Control+z");
    await editor.waitHistoryDepth(page, result.imported.historyDepth - 1);
    result.undone = await canvasState(page, env.TAB_ID);
    await screenshot(page, result, "sidebar-flow-import-undone.png");
}

// (b) A flow with a node type that is not installed is refused, and the type is named.
async function unknownTypesMode(page, result) {
    await editor.showTab(page, env.TAB_ID);
    await editor.newChat(page);
    result.answer = await editor.ask(page, env.QUESTION);
    result.before = await canvasState(page, env.TAB_ID);
    await page.click(".ai-sidebar-flow-import");
    // Refused: the block says why and the editor shows a notification (the refusal comes before any import).
    await page.waitForFunction(() => {
        const statuses = document.querySelectorAll(".ai-sidebar-flow-status");
        return statuses.length && statuses[statuses.length - 1].innerText.trim() !== "" &&
            document.querySelector("#red-ui-notifications .red-ui-notification");
    }, null, { timeout: 15000 });
    result.notifications = await notifications(page);
    result.status = (await page.locator(".ai-sidebar-flow-status").last().innerText()).trim();
    result.after = await canvasState(page, env.TAB_ID);
    result.viewState = await page.evaluate(() => RED.view.state());
    result.unknownNodes = await page.evaluate(() => RED.nodes.filterNodes({ type: "unknown" }).length);
    await screenshot(page, result, "sidebar-flow-unknown-types.png");
}

async function sessionRow(page, text) {
    return page.locator(".ai-sidebar-session", { hasText: text }).first();
}

async function openDrawer(page) {
    if (!(await page.locator(".ai-sidebar-sessions").isVisible())) {
        await page.click(".ai-sidebar-session-button");
    }
    await page.waitForSelector(".ai-sidebar-sessions .ai-sidebar-session[data-session-id]");
}

// (c) Two conversations; switching shows the other one's history; rename, pin, delete; a reload keeps it.
async function sessionsMode(page, result, context, record) {
    const [first, second] = JSON.parse(env.QUESTIONS);
    await editor.showTab(page, env.TAB_ID);
    await editor.newChat(page);
    await editor.ask(page, first);
    await editor.newChat(page);
    result.afterNewChat = await editor.transcript(page);
    await editor.ask(page, second);
    await openDrawer(page);
    // The list is read again once the answer ends, and again until the new conversation is saved and listed
    // (sidebar.refreshSessions): wait for that row, not for any two rows (earlier tests' conversations are two).
    await page.waitForFunction((q) => Array.from(document.querySelectorAll(
        ".ai-sidebar-session[data-session-id] .ai-sidebar-session-label")).some((l) => l.innerText.includes(q)),
    second, { timeout: 15000 });
    result.listed = await page.locator(".ai-sidebar-session[data-session-id] .ai-sidebar-session-label").allInnerTexts();
    await screenshot(page, result, "sidebar-sessions-list.png");

    await (await sessionRow(page, first)).locator(".ai-sidebar-session-main").click();
    await page.waitForFunction((q) => Array.from(document.querySelectorAll(".ai-sidebar-message-user"))
        .some((m) => m.innerText.includes(q)), first);
    await editor.waitIdle(page);
    result.switched = await editor.transcript(page);
    result.drawerOpenAfterSwitch = await page.locator(".ai-sidebar-sessions").isVisible();

    await openDrawer(page);
    await (await sessionRow(page, first)).locator(".ai-sidebar-session-pin").click();
    await page.waitForFunction(() => {
        const mark = document.querySelector(".ai-sidebar-session-button .ai-sidebar-session-pin-mark");
        return mark && mark.offsetParent !== null;
    });
    await (await sessionRow(page, first)).locator(".ai-sidebar-session-rename").click();
    await page.fill(".ai-sidebar-session-input", "Weather station");
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => document.querySelector(".ai-sidebar-session-button .ai-sidebar-session-name")
        .innerText.trim() === "Weather station");
    const secondRow = await sessionRow(page, second);
    await secondRow.locator(".ai-sidebar-session-delete").click();
    result.confirmText = (await secondRow.locator(".ai-sidebar-session-confirm span").innerText()).trim();
    await screenshot(page, result, "sidebar-session-delete-confirm.png");
    await secondRow.locator(".ai-sidebar-session-confirm-delete").click();
    await page.waitForFunction((q) => !Array.from(document.querySelectorAll(".ai-sidebar-session-label"))
        .some((l) => l.innerText.includes(q)), second);
    result.listedAfterDelete = await page.locator(".ai-sidebar-session[data-session-id] .ai-sidebar-session-label")
        .allInnerTexts();
    result.pinnedRows = await page.locator(".ai-sidebar-session-pinned .ai-sidebar-session-label").allInnerTexts();
    await screenshot(page, result, "sidebar-sessions-pinned-renamed.png");

    // Reopening the editor brings back the conversation that was open, with its history.
    const again = await editor.openEditor(context, env.EDITOR_URL, record, credentials());
    await editor.showTab(again, env.TAB_ID);
    await again.waitForFunction(() => document.querySelectorAll(".ai-sidebar-message").length > 0 &&
        !document.querySelector(".ai-sidebar-loading"), null, { timeout: 15000 });
    await again.waitForFunction(() => document.querySelector(".ai-sidebar-session-button .ai-sidebar-session-name")
        .innerText.trim() === "Weather station", null, { timeout: 15000 });
    result.reloaded = await editor.transcript(again);
    result.reloadedHeader = (await again.locator(".ai-sidebar-session-button").innerText()).trim();
    await screenshot(again, result, "sidebar-session-history-reloaded.png");
}

/** What a sanitised answer must not contain, read from the DOM of every assistant message. */
async function inertCheck(page) {
    return page.evaluate(() => {
        const answers = Array.from(document.querySelectorAll(".ai-sidebar-message-assistant"));
        const html = answers.map((a) => a.innerHTML).join("\n");
        const all = answers.flatMap((a) => Array.from(a.querySelectorAll("*")));
        return {
            flag: window.__aiSidebarXss === undefined ? null : window.__aiSidebarXss,
            scripts: answers.reduce((n, a) => n + a.querySelectorAll("script").length, 0),
            eventAttributes: all.filter((el) => Array.from(el.attributes).some((a) => /^on/i.test(a.name))).length,
            javascriptUrls: all.filter((el) => ["href", "src", "action", "formaction", "xlink:href"]
                .some((name) => /^\s*javascript:/i.test(el.getAttribute(name) || ""))).length,
            iframes: answers.reduce((n, a) => n + a.querySelectorAll("iframe, object, embed").length, 0),
            images: answers.reduce((n, a) => n + a.querySelectorAll("img").length, 0),
            links: answers.reduce((n, a) => n + a.querySelectorAll("a").length, 0),
            hasOnerrorText: /onerror\s*=/i.test(html),
            text: answers.map((a) => a.innerText).join("\n")
        };
    });
}

// (d) HTML and script in an answer render inert, live and when the history is reloaded.
async function inertHtmlMode(page, result, context, record) {
    await editor.showTab(page, env.TAB_ID);
    await editor.newChat(page);
    await editor.ask(page, env.QUESTION);
    // A duration stays: what is checked is that nothing ran (an onerror, a script), which no event announces.
    await page.waitForTimeout(500);
    result.live = await inertCheck(page);
    // Clicking every link in the answer must not run anything either.
    const links = page.locator(".ai-sidebar-message-assistant a");
    for (let i = 0; i < await links.count(); i++) {
        await links.nth(i).click({ modifiers: [] }).catch(() => {});
    }
    // A duration stays: nothing must run after the clicks, which no event announces.
    await page.waitForTimeout(300);
    result.afterClicks = await inertCheck(page);
    await screenshot(page, result, "sidebar-inert-html.png");
    const again = await editor.openEditor(context, env.EDITOR_URL, record, credentials());
    await editor.showTab(again, env.TAB_ID);
    await again.waitForSelector(".ai-sidebar-message-assistant .ai-sidebar-text", { timeout: 15000 });
    // A duration stays (the answer is shown, waited for above): nothing must run from the reloaded history.
    await again.waitForTimeout(500);
    result.reloaded = await inertCheck(again);
}

// The actions and their shortcuts: ctrl-g a shows the tab; ctrl-g s explains the selected nodes. Neither takes a
// key the editor binds to one of its own actions.
async function explainMode(page, result) {
    result.sharedKeys = await page.evaluate(() => {
        const ours = RED.actions.list().filter((a) => a.id.startsWith("ai-sidebar:") && a.key);
        return RED.actions.list().filter((a) => !a.id.startsWith("ai-sidebar:") &&
            ours.some((o) => o.key === a.key)).map((a) => a.key + " " + a.id);
    });
    await editor.showTab(page, env.TAB_ID);
    await editor.newChat(page);
    await page.evaluate(() => RED.sidebar.show("info"));
    result.visibleBefore = await page.locator(".ai-sidebar").isVisible();
    await page.keyboard.press("Control+g");
    await page.keyboard.press("a");
    await page.waitForSelector(".ai-sidebar", { state: "visible", timeout: 15000 });
    result.visibleAfterOpen = await page.locator(".ai-sidebar").isVisible();
    result.actionLabels = await page.evaluate(() => ["ai-sidebar:open-ai-assistant", "ai-sidebar:explain-selection"]
        .map((name) => RED.actions.list().find((a) => a.id === name)).map((a) => a && a.label));
    result.selected = await page.evaluate((id) => {
        const nodes = RED.nodes.filterNodes({ z: id }).filter((n) => n.type !== "comment").slice(0, 2);
        RED.view.select({ nodes: nodes });
        return nodes.map((n) => n.id);
    }, env.TAB_ID);
    await page.evaluate(() => RED.sidebar.show("info"));
    await page.keyboard.press("Control+g");
    await page.keyboard.press("s");
    await page.waitForSelector(".ai-sidebar-message-user");
    await editor.waitIdle(page);
    result.visibleAfterExplain = await page.locator(".ai-sidebar").isVisible();
    result.transcript = await editor.transcript(page);
    result.toolCards = await page.locator(".ai-sidebar-tool .ai-sidebar-tool-label").allInnerTexts();
    await screenshot(page, result, "sidebar-explain-selection.png");
}

// The context chip: the open tab goes out as flowData (undeployed edits included, no credentials); the chip's
// × sends the next question without context; a new selection brings it back.
async function contextMode(page, result) {
    const bodies = [];
    page.on("request", (request) => {
        if (request.url().endsWith("ai-sidebar/stream-chat")) {
            bodies.push(JSON.parse(request.postData()));
        }
    });
    await editor.showTab(page, env.TAB_ID);
    await editor.newChat(page);
    // Credentials as the editor holds them after a user typed them into a config node's edit dialog.
    result.secretSet = await page.evaluate((secret) => {
        let found = false;
        RED.nodes.eachConfig((node) => {
            if (node.type === "mqtt-broker") {
                node.credentials = { user: "mqtt-user", password: secret };
                found = true;
            }
        });
        return found;
    }, env.SECRET);
    result.renamed = await page.evaluate((id) => {
        const node = RED.nodes.filterNodes({ z: id }).find((n) => n.type !== "comment");
        node.name = "renamed-in-editor-only";
        node.changed = true;
        node.dirty = true;
        RED.nodes.dirty(true);
        RED.view.redraw();
        return node.id;
    }, env.TAB_ID);
    await editor.ask(page, JSON.parse(env.QUESTIONS)[0]);
    result.chipWithContext = (await page.locator(".ai-sidebar-context").innerText()).trim();
    await page.click(".ai-sidebar-context-remove");
    result.chipRemoved = (await page.locator(".ai-sidebar-context").innerText()).trim();
    await screenshot(page, result, "sidebar-context-removed.png");
    await editor.ask(page, JSON.parse(env.QUESTIONS)[1]);
    result.chipAfterSend = (await page.locator(".ai-sidebar-context").innerText()).trim();
    await page.evaluate((id) => {
        const node = RED.nodes.filterNodes({ z: id }).find((n) => n.type !== "comment");
        RED.view.select({ nodes: [node] });
    }, env.TAB_ID);
    result.chipAfterSelection = (await page.locator(".ai-sidebar-context").innerText()).trim();
    result.bodies = bodies;
}

// With the service down the tab says so; it recovers once the service is back (the test starts it on "offline").
// The banner names the commands that start the service (GET ai-sidebar/service-status); Copy puts one on the clipboard.
async function offlineMode(page, result, context) {
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: new URL(env.EDITOR_URL).origin });
    await editor.showTab(page, env.TAB_ID);
    await page.waitForSelector(".ai-sidebar-status", { state: "visible", timeout: 20000 });
    await page.waitForSelector(".ai-sidebar-status-command", { state: "visible", timeout: 20000 });
    result.offlineStatus = (await page.locator(".ai-sidebar-status > span").innerText()).trim();
    result.commands = await page.locator(".ai-sidebar-status-command").evaluateAll((blocks) => blocks.map((b) => ({
        id: b.getAttribute("data-command"),
        label: b.querySelector(".ai-sidebar-status-label").innerText.trim(),
        command: b.querySelector("code").innerText.trim(),
        copyButton: !!b.querySelector(".ai-sidebar-status-copy")
    })));
    await page.click(".ai-sidebar-status-command[data-command=run] .ai-sidebar-status-copy");
    await editor.clipboardFilled(page);
    result.copiedCommand = await page.evaluate(() => navigator.clipboard.readText().catch((err) => "error: " + err));
    await page.locator(".ai-sidebar").screenshot({ path: path.join(env.OUT_DIR, "sidebar-service-banner.png") });
    result.scenarioVisibleOffline = await page.locator(".ai-sidebar-scenario").isVisible();
    result.offlineAnswer = await editor.ask(page, "is anyone there?");
    result.inputAfterOfflineAnswer = await page.inputValue(".ai-sidebar-input");
    await screenshot(page, result, "sidebar-service-unreachable.png");
    stage("offline");
    // The test starts the service now; the Retry button asks again, as a user would.
    const deadline = Date.now() + 60000;
    while (Date.now() < deadline && await page.locator(".ai-sidebar-status").isVisible()) {
        await page.click(".ai-sidebar-retry").catch(() => {});
        await page.waitForTimeout(1000);
    }
    result.statusVisibleAfter = await page.locator(".ai-sidebar-status").isVisible();
    await page.waitForSelector(".ai-sidebar-scenario", { state: "visible", timeout: 10000 });
    result.scenarios = await page.locator(".ai-sidebar-scenario option").count();
    result.recoveredAnswer = await editor.ask(page, env.QUESTION);
    result.errors = await page.locator(".ai-sidebar-message-assistant").last().locator(".ai-sidebar-error")
        .allInnerTexts();
    await screenshot(page, result, "sidebar-service-recovered.png");
}

/** Every response body and WebSocket frame the browser receives from now on, to look for secrets in. */
function recordTraffic(context) {
    const traffic = { bodies: [], frames: [] };
    context.on("response", (response) => {
        traffic.bodies.push(response.body().then((body) => ({ url: response.url(), body: body }),
            (err) => ({ url: response.url(), error: String(err) })));
    });
    context.on("page", (page) => {
        page.on("websocket", (socket) => {
            socket.on("framereceived", (frame) => traffic.frames.push(String(frame.payload)));
        });
    });
    return traffic;
}

/** Where each of `secrets` shows up: the page's HTML, its localStorage, response bodies and WebSocket frames. */
async function findSecrets(page, traffic, secrets) {
    const shown = await page.evaluate(() => ({
        html: document.documentElement.outerHTML,
        storage: JSON.stringify(Object.assign({}, window.localStorage))
    }));
    const settled = await Promise.race([
        Promise.all(traffic.bodies),
        new Promise((resolve) => setTimeout(() => resolve(null), 15000))
    ]);
    const responses = settled || [];
    const found = { html: [], localStorage: [], responses: [], frames: [] };
    secrets.forEach((secret) => {
        if (shown.html.includes(secret)) found.html.push(secret);
        if (shown.storage.includes(secret)) found.localStorage.push(secret);
        responses.forEach((r) => {
            if (r.body && r.body.includes(secret)) found.responses.push(r.url);
        });
        traffic.frames.forEach((frame) => {
            if (frame.includes(secret)) found.frames.push(frame.slice(0, 200));
        });
    });
    return {
        found: found,
        allResponsesSettled: settled !== null,
        responsesRead: responses.filter((r) => r.body).map((r) => r.url),
        responsesUnread: responses.filter((r) => !r.body).map((r) => r.url + " " + r.error),
        frames: traffic.frames.length,
        htmlLength: shown.html.length
    };
}

async function pickerState(page) {
    return page.evaluate(() => {
        const select = document.querySelector(".ai-sidebar-config");
        const note = document.querySelector(".ai-sidebar-config-note");
        return {
            visible: !!select && select.offsetParent !== null,
            options: select ? Array.from(select.options).map((o) => ({ value: o.value, text: o.text })) : [],
            selected: select ? select.value : null,
            title: select ? select.title : null,
            note: note && note.offsetParent !== null ? note.innerText.trim() : null
        };
    });
}

// The AI configuration picker: it lists the deployed ai-config nodes, the chosen one answers (the runtime puts its
// settings and key into the request), the choice survives a reload, and a deploy that removes the node falls back to
// the service default with a note (the test deploys when told "chosen"). No key ever reaches the page.
async function configsMode(page, result, context, record) {
    const ids = JSON.parse(env.CONFIG_IDS);
    const questions = JSON.parse(env.QUESTIONS);
    const bodies = [];
    context.on("request", (request) => {
        if (request.url().endsWith("ai-sidebar/stream-chat")) {
            bodies.push(JSON.parse(request.postData()));
        }
    });
    await editor.showTab(page, env.TAB_ID);
    await editor.newChat(page);
    await page.waitForFunction((count) => {
        const select = document.querySelector(".ai-sidebar-config");
        return select && select.offsetParent !== null && select.options.length === count;
    }, Object.keys(ids).length + 1, { timeout: 15000 });
    result.listed = await pickerState(page);
    await page.selectOption(".ai-sidebar-config", ids.beta);
    result.chosen = await pickerState(page);
    result.answerWithConfig = await editor.ask(page, questions[0]);
    await screenshot(page, result, "sidebar-config-chosen.png");
    await page.locator(".ai-sidebar .red-ui-sidebar-header").screenshot({
        path: path.join(env.OUT_DIR, "sidebar-config-header.png")
    });

    // A new editor page of the same user (same profile) shows the same choice.
    const again = await editor.openEditor(context, env.EDITOR_URL, record, credentials());
    await page.close();
    await editor.showTab(again, env.TAB_ID);
    await again.waitForFunction(() => {
        const select = document.querySelector(".ai-sidebar-config");
        return select && select.offsetParent !== null;
    }, null, { timeout: 15000 });
    result.reloaded = await pickerState(again);

    // Editing the chosen node and deploying from this editor keeps the choice. Node-RED answers a deploy before it
    // has started the nodes again: a list read on the editor's "deploy" event lacked the node and dropped the choice.
    result.redeployed = [];
    for (let round = 0; round < 3; round++) {
        const name = "Team Beta " + round;
        await again.evaluate(({ id, name }) => {
            const node = RED.nodes.node(id);
            node.name = name;
            node.changed = true;
            node.dirty = true;
            RED.nodes.dirty(true);
        }, { id: ids.beta, name });
        await again.click("#red-ui-header-button-deploy");
        // The list is read again once the flows have started: the node's new name shows.
        await again.waitForFunction((name) => Array.from(document.querySelectorAll(".ai-sidebar-config option"))
            .some((option) => option.text.startsWith(name + " (")), name, { timeout: 30000 });
        result.redeployed.push(await pickerState(again));
    }

    // The test deploys the flows with a node of a type Node-RED does not have: the runtime stops every flow and runs
    // no ai-config node. An editor opened then keeps the choice, shown as not running (not "no longer deployed").
    stage("stopped");
    await again.waitForFunction(() => window.NodeRedAiSidebar.adminApi.requestJson("GET", "ai-sidebar/configs")
        .then((list) => list.length === 0), null, { timeout: 30000, polling: 250 });
    const stopped = await editor.openEditor(context, env.EDITOR_URL, record, credentials());
    await again.close();
    await editor.showTab(stopped, env.TAB_ID);
    await stopped.waitForFunction((id) => {
        const option = document.querySelector(".ai-sidebar-config option[value='" + id + "']");
        return option && RED.nodes.version() && document.querySelector(".ai-sidebar-config").value === id;
    }, ids.beta, { timeout: 30000 });
    result.whileStopped = await pickerState(stopped);
    // The test deploys the flows without the unknown node: the runtime runs them again, the list has the node again.
    stage("restarted");
    await stopped.waitForFunction((id) => Array.from(document.querySelectorAll(".ai-sidebar-config option"))
        .some((option) => option.value === id && !/\(not running\)/.test(option.text)), ids.beta, { timeout: 30000 });
    result.afterRestart = await pickerState(stopped);
    const again2 = stopped;

    // The test now deploys the flows without the chosen node; the picker hears of it ("runtime-state").
    stage("chosen");
    await again2.waitForSelector(".ai-sidebar-config-note", { state: "visible", timeout: 30000 });
    result.afterRemoval = await pickerState(again2);
    await screenshot(again2, result, "sidebar-config-fallback.png");
    result.answerWithDefault = await editor.ask(again2, questions[1]);
    result.afterDefaultAnswer = await pickerState(again2);
    result.bodies = bodies;
    result.secrets = await findSecrets(again2, record.traffic, JSON.parse(env.SECRETS));
}

/** What the code blocks of the last answer look like: language, highlighted spans, text, flow buttons. */
async function codeBlocks(page) {
    return page.evaluate(() => {
        const answers = document.querySelectorAll(".ai-sidebar-message-assistant");
        const answer = answers[answers.length - 1];
        if (!answer) return [];
        return Array.from(answer.querySelectorAll("pre > code")).map((code) => {
            const pre = code.parentElement;
            const before = pre.previousElementSibling;
            const bar = before && before.classList.contains("ai-sidebar-flow-bar") ? before : null;
            const classes = new Set(Array.from(code.querySelectorAll("[class]"))
                .flatMap((el) => Array.from(el.classList)));
            return {
                language: code.getAttribute("data-language"),
                highlighted: code.classList.contains("hljs"),
                classes: Array.from(classes).sort(),
                spans: code.querySelectorAll("span").length,
                otherElements: code.querySelectorAll(":not(span)").length,
                text: code.textContent,
                color: getComputedStyle(code.querySelector(".hljs-string") || code).color,
                buttons: bar ? Array.from(bar.querySelectorAll("button")).map((b) => b.innerText.trim()) : []
            };
        });
    });
}

// Code blocks in an answer are highlighted while the answer streams, when it is final and when the history is
// reloaded; the flow block keeps Import and Copy, which still carry the flow's exact text.
async function highlightMode(page, result, context, record) {
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: new URL(env.EDITOR_URL).origin });
    await editor.showTab(page, env.TAB_ID);
    await editor.newChat(page);
    await editor.waitIdle(page);
    await page.fill(".ai-sidebar-input", env.QUESTION);
    await page.click(".ai-sidebar-send");
    // While the answer streams (the cursor is shown), a finished block is already highlighted.
    result.whileStreaming = null;
    const deadline = Date.now() + 30000;
    while (Date.now() < deadline) {
        const streaming = await page.locator(".ai-sidebar-cursor").count();
        const blocks = await codeBlocks(page);
        if (streaming && blocks.some((b) => b.highlighted)) {
            result.whileStreaming = blocks;
            break;
        }
        if (!streaming && blocks.length) break;
        await page.waitForTimeout(50);
    }
    await editor.waitIdle(page);
    result.live = await codeBlocks(page);
    await screenshot(page, result, "sidebar-code-highlighting.png");
    // The sidebar alone, scrolled to the flow block's Import / Copy bar.
    await page.locator(".ai-sidebar-flow-bar").last().evaluate((bar) => bar.scrollIntoView());
    await page.locator(".ai-sidebar").screenshot({
        path: path.join(env.OUT_DIR, "sidebar-code-highlighting-flow.png")
    });

    await page.click(".ai-sidebar-flow-copy");
    await editor.clipboardFilled(page);
    result.copied = await page.evaluate(() => navigator.clipboard.readText().catch((err) => "error: " + err));
    result.before = await canvasState(page, env.TAB_ID);
    await page.click(".ai-sidebar-flow-import");
    await editor.waitImportDragging(page);
    const chart = await page.locator("#red-ui-workspace-chart").boundingBox();
    await page.mouse.move(chart.x + chart.width * 0.5, chart.y + chart.height * 0.6, { steps: 5 });
    await page.mouse.click(chart.x + chart.width * 0.5, chart.y + chart.height * 0.6);
    await editor.waitImportPlaced(page);
    result.imported = await canvasState(page, env.TAB_ID);
    await page.keyboard.press("Control+z");
    await editor.waitHistoryDepth(page, result.imported.historyDepth - 1);
    result.undone = await canvasState(page, env.TAB_ID);

    const again = await editor.openEditor(context, env.EDITOR_URL, record, credentials());
    await editor.showTab(again, env.TAB_ID);
    // attached, not visible: the first highlighted block is the flow JSON, collapsed by default (issue 31)
    await again.waitForSelector(".ai-sidebar-message-assistant pre > code.hljs", { state: "attached", timeout: 15000 });
    result.reloaded = await codeBlocks(again);
    result.flag = await again.evaluate(() => window.__aiSidebarXss === undefined ? null : window.__aiSidebarXss);
    result.flagLive = await page.evaluate(() => window.__aiSidebarXss === undefined ? null : window.__aiSidebarXss);
}

const MODES = Object.assign({
    "import": importMode,
    "unknown-types": unknownTypesMode,
    "sessions": sessionsMode,
    "inert-html": inertHtmlMode,
    "explain": explainMode,
    "context": contextMode,
    "offline": offlineMode,
    "configs": configsMode,
    "highlight": highlightMode
}, require("./sidebar_conversation").MODES, require("./sidebar_import_wait").MODES,
    require("./sidebar_code_blocks").MODES, require("./sidebar_recovery").MODES,
    require("./sidebar_a11y").MODES, require("./sidebar_context_seen").MODES, require("./sidebar_round2").MODES,
    require("./sidebar_panel").MODES);

function credentials() {
    return env.USERNAME ? { username: env.USERNAME, password: env.PASSWORD } : null;
}

async function main() {
    const mode = MODES[env.MODE];
    if (!mode) {
        throw new Error("MODE must be one of " + Object.keys(MODES).join(", "));
    }
    const { browser, context } = await editor.launch();
    const result = { mode: env.MODE };
    const record = {};
    if (env.SECRETS) {
        record.traffic = recordTraffic(context);
    }
    try {
        const page = await editor.openEditor(context, env.EDITOR_URL, record, credentials());
        await mode(page, result, context, record);
    } catch (err) {
        result.failure = String(err && err.stack || err);
    } finally {
        result.pageErrors = record.pageErrors || [];
        result.consoleErrors = record.consoleErrors || [];
        result.dialogs = record.dialogs || [];
        await browser.close();
    }
    process.stdout.write(JSON.stringify(result) + "\n");
}

main().catch((err) => { process.stderr.write(String(err && err.stack || err) + "\n"); process.exit(1); });
