// The sidebar's second round (issue 16), driven by sidebar_features.js: the question limit the service states,
// the context of reloaded questions and attached debug messages, the model in the header, conversations (scroll,
// drafts, list, search) and node links in answers. Each mode runs at 1280×720 and with a narrow sidebar.
// Input (env): TAB_ID, QUESTION(S), NARROW_WIDTH, and per mode what its comment says.
"use strict";
const editor = require("./editor");

const env = process.env;

async function counterText(page) {
    return page.evaluate(() => {
        const counter = document.querySelector(".ai-sidebar-counter");
        return counter && counter.offsetParent !== null ? counter.innerText.trim() : null;
    });
}

// The limit on a question comes from the service's scenarios answer (here changed on its way to the editor to
// LIMIT characters); while the service is down the sidebar counts against 10,000.
async function limitMode(page, result) {
    const limit = Number(env.LIMIT);
    await page.route("**/ai-sidebar/scenarios*", async (route) => {
        const response = await route.fetch();
        const body = await response.json();
        result.serviceLimit = body.maxMessageChars;
        await route.fulfill({ response, json: Object.assign({}, body, { maxMessageChars: limit }) });
    });
    await page.reload({ waitUntil: "domcontentloaded" });
    await editor.editorReady(page);
    await page.setViewportSize({ width: 1280, height: 720 });
    await editor.showTab(page, env.TAB_ID);
    await editor.newChat(page);
    await page.waitForFunction(() => document.querySelector(".ai-sidebar-scenario option"), null,
        { timeout: 15000 });
    await page.fill(".ai-sidebar-input", "x".repeat(Math.floor(limit * 0.9) - 1));
    result.belowShare = await counterText(page);
    await page.fill(".ai-sidebar-input", "x".repeat(limit + 5));
    result.over = await counterText(page);
    await editor.detailScreenshot(page.locator(".ai-sidebar-composer"), result, "sidebar-limit-from-service.png");
    await page.fill(".ai-sidebar-input", "");
}

module.exports = { MODES: { "limit": limitMode } };

async function sentContexts(page) {
    return page.evaluate(() => Array.from(document.querySelectorAll(".ai-sidebar-message-user")).map((el) => {
        const sent = el.querySelector(".ai-sidebar-sent-context");
        return sent ? sent.innerText.trim() : null;
    }));
}

/** The context chip's parts and whether each is cut (narrow sidebar: the name may be, the counts never). */
async function chipLayout(page) {
    return page.evaluate(() => {
        const chip = document.querySelector(".ai-sidebar-context");
        const name = chip.querySelector(".ai-sidebar-context-name");
        const detail = chip.querySelector(".ai-sidebar-context-detail");
        const label = chip.querySelector(".ai-sidebar-context-label").getBoundingClientRect();
        const d = detail.getBoundingClientRect();
        return {
            name: name.textContent, detail: detail.textContent,
            nameCut: name.scrollWidth > name.clientWidth,
            nameOverflow: getComputedStyle(name).textOverflow,
            detailWhole: detail.scrollWidth <= Math.ceil(d.width) && d.right <= label.right + 0.5 && d.width > 0,
            chipInside: chip.getBoundingClientRect().right <=
                document.querySelector(".ai-sidebar-composer").getBoundingClientRect().right + 0.5
        };
    });
}

/** Show the Debug sidebar, let the inject node INJECT_ID fire, and wait for the message of DEBUG_ID there. */
async function debugMessageShown(page, count) {
    const selector = "#red-ui-sidebar .red-ui-debug-msg-node-" + env.DEBUG_ID.replace(/\./g, "_");
    await page.evaluate(() => RED.sidebar.show("debug"));
    await page.evaluate((id) => $.ajax({ url: "inject/" + id, type: "POST" }), env.INJECT_ID);
    await page.waitForFunction((args) => document.querySelectorAll(args[0]).length >= args[1],
        [selector, count], { timeout: 15000 });
    return page.locator(selector).last();
}

// The context goes with each question and comes back with it after a reload; "Explain" on a Debug sidebar message
// asks about it, or attaches it to the question being typed (the chip lists it). Env: INJECT_ID (an inject node
// on TAB_ID wired to a debug node), QUESTIONS (the first and the typed one).
async function contextHistoryMode(page, result, context, record) {
    const questions = JSON.parse(env.QUESTIONS);
    await page.setViewportSize({ width: 1280, height: 720 });
    await editor.showTab(page, env.TAB_ID);
    await editor.newChat(page);
    await page.evaluate((id) => {
        const nodes = RED.nodes.filterNodes({ z: id }).filter((n) => n.type !== "comment").slice(0, 2);
        RED.view.select({ nodes: nodes });
    }, env.TAB_ID);
    await editor.ask(page, questions[0]);
    await page.evaluate(() => RED.view.select(""));

    // "Explain" with an empty input asks at once.
    const shown = await debugMessageShown(page, 1);
    result.debugShown = (await shown.innerText()).trim();
    await shown.hover();
    await editor.detailScreenshot(shown, result, "sidebar-debug-explain-button.png");
    await shown.locator(".ai-sidebar-debug-explain").click();
    result.aiTabShown = await page.evaluate(() => !!document.querySelector(".ai-sidebar").offsetParent);
    await editor.waitIdle(page);

    // With a question being typed, "Explain" attaches the message to it.
    await page.fill(".ai-sidebar-input", questions[1]);
    const again = await debugMessageShown(page, 2);
    await again.hover();
    await again.locator(".ai-sidebar-debug-explain").click();
    await page.waitForSelector(".ai-sidebar-context-debug-item", { timeout: 5000 });
    result.attached = await page.locator(".ai-sidebar-context-debug-item").allInnerTexts();
    result.chipWithDebug = (await page.locator(".ai-sidebar-context").innerText()).trim();
    result.inputKept = await page.inputValue(".ai-sidebar-input");
    await editor.screenshot(page, result, "sidebar-debug-attached.png");
    await page.click(".ai-sidebar-send");
    await editor.waitIdle(page);
    result.attachedAfterSend = await page.locator(".ai-sidebar-context-debug-item").count();
    result.live = await sentContexts(page);

    const reloaded = await editor.openEditor(context, env.EDITOR_URL, record,
        env.USERNAME ? { username: env.USERNAME, password: env.PASSWORD } : null);
    await reloaded.setViewportSize({ width: 1280, height: 720 });
    await editor.showTab(reloaded, env.TAB_ID);
    await reloaded.waitForFunction((n) => document.querySelectorAll(".ai-sidebar-message-user").length >= n,
        questions.length + 1, { timeout: 15000 });
    result.reloaded = await sentContexts(reloaded);
    await editor.screenshot(reloaded, result, "sidebar-context-reloaded.png");

    // Narrow: the chip cuts the flow's name, never the counts.
    await reloaded.evaluate((id) => {
        const nodes = RED.nodes.filterNodes({ z: id }).filter((n) => n.type !== "comment").slice(0, 3);
        RED.view.select({ nodes: nodes });
    }, env.TAB_ID);
    result.wideChip = await chipLayout(reloaded);
    const before = await editor.sidebarWidth(reloaded);
    try {
        result.narrowWidth = await editor.resizeSidebar(reloaded, Number(env.NARROW_WIDTH));
        result.narrowChip = await chipLayout(reloaded);
        await editor.detailScreenshot(reloaded.locator(".ai-sidebar-composer"), result,
            "sidebar-chip-narrow.png");
    } finally {
        await editor.resizeSidebar(reloaded, before);
    }
}

module.exports.MODES["context-history"] = contextHistoryMode;

/** The model line under the header and the header itself: texts, boxes, whether the line is cut. */
async function modelLayout(page) {
    return page.evaluate(() => {
        const line = document.querySelector(".ai-sidebar-model");
        const header = document.querySelector(".ai-sidebar .red-ui-sidebar-header").getBoundingClientRect();
        const sidebar = document.querySelector(".ai-sidebar").getBoundingClientRect();
        const box = line.getBoundingClientRect();
        const newChat = document.querySelector(".ai-sidebar-new-chat").getBoundingClientRect();
        return {
            text: line.innerText.trim(), title: line.getAttribute("title"),
            visible: !!line.offsetParent && box.height > 0,
            cut: line.scrollWidth > line.clientWidth, overflow: getComputedStyle(line).textOverflow,
            inside: box.left >= sidebar.left - 0.5 && box.right <= sidebar.right + 0.5,
            belowHeader: box.top >= header.bottom - 0.5,
            newChatInside: newChat.right <= header.right + 0.5 && newChat.width > 0,
            fontSize: getComputedStyle(line).fontSize
        };
    });
}

// The header names the model that answers: the service's own, then the chosen ai-config node's; readable at
// 1280×720 and at the narrowest sidebar. Env: CONFIG_ID (an ai-config node to choose).
async function headerModelMode(page, result) {
    await page.setViewportSize({ width: 1280, height: 720 });
    await editor.showTab(page, env.TAB_ID);
    await page.selectOption(".ai-sidebar-config", "");
    await page.waitForFunction(() => document.querySelector(".ai-sidebar-model").offsetParent, null,
        { timeout: 15000 });
    result.serviceDefault = await modelLayout(page);
    await page.selectOption(".ai-sidebar-config", env.CONFIG_ID);
    result.chosen = await modelLayout(page);
    await editor.detailScreenshot(page.locator("#red-ui-sidebar"), result, "sidebar-header-model.png");
    const before = await editor.sidebarWidth(page);
    try {
        result.narrowWidth = await editor.resizeSidebar(page, Number(env.NARROW_WIDTH));
        result.narrow = await modelLayout(page);
        await editor.detailScreenshot(page.locator("#red-ui-sidebar"), result, "sidebar-header-model-narrow.png");
    } finally {
        await page.selectOption(".ai-sidebar-config", "");
        await editor.resizeSidebar(page, before);
    }
}

module.exports.MODES["header-model"] = headerModelMode;

async function conversationState(page) {
    // What the user sees: after the next frame, when a resize of the list (the usage line coming under the header)
    // has been answered by the sidebar's ResizeObserver.
    await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
    return page.evaluate(() => {
        const list = document.querySelector(".ai-sidebar-messages");
        return {
            draft: document.querySelector(".ai-sidebar-input").value,
            drawerOpen: !!document.querySelector(".ai-sidebar-sessions").offsetParent,
            scrolls: list.scrollHeight > list.clientHeight + 10,
            atBottom: list.scrollHeight - list.scrollTop - list.clientHeight < 2,
            questions: document.querySelectorAll(".ai-sidebar-message-user").length,
            // When it is not at the bottom, by how much and of what.
            list: { scrollHeight: list.scrollHeight, scrollTop: list.scrollTop, clientHeight: list.clientHeight },
            children: Array.from(list.children).map((child) => child.className + " " + child.offsetHeight)
        };
    });
}

// A reopened conversation, once it shows its latest message: content that comes after the history (the usage line
// under the header shrinking the list) is answered by the sidebar's ResizeObserver a frame later, which a loaded
// machine can put after one read. The wait ends at the state or after 15 s; the state read then is what is asserted.
async function reopenedState(page) {
    await page.waitForFunction(() => {
        const list = document.querySelector(".ai-sidebar-messages");
        return list.scrollHeight - list.scrollTop - list.clientHeight < 2;
    }, null, { timeout: 15000 }).catch(() => {});
    return conversationState(page);
}

/** Add a 120 px row at the end of the last answer, as a row that comes after a request would. */
async function growLastAnswer(page, className) {
    await page.evaluate((name) => {
        const answers = document.querySelectorAll(".ai-sidebar-message-assistant");
        const row = document.createElement("div");
        row.className = name;
        row.style.height = "120px";
        answers[answers.length - 1].appendChild(row);
    }, className);
}

// Conversations: each keeps its unsent question (also across a reload), a reopened one shows its latest message,
// and the list closes on Escape or a click outside. Env: QUESTIONS (asked in the first conversation), DRAFTS (one
// for it, one for a new chat).
async function conversationsMode(page, result, context, record) {
    const questions = JSON.parse(env.QUESTIONS);
    const drafts = JSON.parse(env.DRAFTS);
    await page.setViewportSize({ width: 1280, height: 720 });
    await editor.showTab(page, env.TAB_ID);
    await editor.newChat(page);
    for (const question of questions) {
        await editor.ask(page, question);
    }
    const first = await page.evaluate(() => localStorage.getItem(Object.keys(localStorage)
        .filter((k) => k.startsWith("node-red-contrib-ai-sidebar.sessionId"))[0]));
    await page.locator(".ai-sidebar-session-button").click();
    await page.waitForSelector(".ai-sidebar-session[data-session-id='" + first + "']", { timeout: 15000 });
    await page.keyboard.press("Escape");
    await page.click(".ai-sidebar-input");
    await page.fill(".ai-sidebar-input", drafts[0]);
    await page.locator(".ai-sidebar-input").press("End");
    await page.type(".ai-sidebar-input", "!");
    await editor.newChat(page);
    result.newChat = await conversationState(page);
    await page.type(".ai-sidebar-input", drafts[1]);

    // Back to the first conversation through the list. The mouse leaves the New chat button first: its hover
    // popover lies over the Conversations button at a narrow width (a click timed out on a loaded machine).
    await page.mouse.move(0, 0);
    await page.waitForFunction(() => !document.querySelector(".red-ui-popover"), null, { timeout: 10000 });
    await page.click(".ai-sidebar-session-button");
    result.listOpen = await conversationState(page);
    await page.click(".ai-sidebar-session[data-session-id='" + first + "'] .ai-sidebar-session-main");
    await page.waitForFunction((n) => document.querySelectorAll(".ai-sidebar-message-user").length === n,
        questions.length, { timeout: 15000 });
    result.back = await reopenedState(page);
    // A message that grows once it is shown (a row an answer gets when a request returns) keeps the list at its
    // latest message, unless the user clicked inside the list: what they opened is not pulled away from them.
    await growLastAnswer(page, "ai-test-late-row");
    result.grown = await reopenedState(page);
    await page.locator(".ai-sidebar-message-user").last().click();
    await growLastAnswer(page, "ai-test-after-click");
    result.grownAfterClick = await conversationState(page);

    // Escape and a click outside close the list.
    await page.click(".ai-sidebar-session-button");
    await page.waitForSelector(".ai-sidebar-sessions", { state: "visible" });
    await page.keyboard.press("Escape");
    result.afterEscape = await conversationState(page);
    await page.click(".ai-sidebar-session-button");
    await page.waitForSelector(".ai-sidebar-sessions", { state: "visible" });
    await editor.screenshot(page, result, "sidebar-conversation-list.png");
    await page.mouse.click(400, 400);
    result.afterClickOutside = await conversationState(page);

    const reloaded = await editor.openEditor(context, env.EDITOR_URL, record,
        env.USERNAME ? { username: env.USERNAME, password: env.PASSWORD } : null);
    await reloaded.setViewportSize({ width: 1280, height: 720 });
    await editor.showTab(reloaded, env.TAB_ID);
    await reloaded.waitForFunction((n) => document.querySelectorAll(".ai-sidebar-message-user").length === n,
        questions.length, { timeout: 15000 });
    result.reloaded = await reopenedState(reloaded);
    await editor.screenshot(reloaded, result, "sidebar-conversation-reopened.png");

    const before = await editor.sidebarWidth(reloaded);
    try {
        result.narrowWidth = await editor.resizeSidebar(reloaded, Number(env.NARROW_WIDTH));
        await reloaded.click(".ai-sidebar-session-button");
        await reloaded.waitForSelector(".ai-sidebar-sessions", { state: "visible" });
        result.narrowOpen = await conversationState(reloaded);
        await reloaded.keyboard.press("Escape");
        result.narrowAfterEscape = await conversationState(reloaded);
    } finally {
        await editor.resizeSidebar(reloaded, before);
    }
}

module.exports.MODES.conversations = conversationsMode;

/** The last answer's node links and source links, and which tab is open. */
async function linkState(page) {
    return page.evaluate(() => {
        const answers = document.querySelectorAll(".ai-sidebar-message-assistant");
        const answer = answers[answers.length - 1];
        const inside = (el, selector) => !!el.closest(selector);
        return {
            activeTab: RED.workspaces.active(),
            links: Array.from(answer.querySelectorAll(".ai-sidebar-text .ai-sidebar-node-link")).map((a) => ({
                text: a.innerText.trim(), id: a.getAttribute("data-node-id"), title: a.getAttribute("title"),
                inPre: inside(a, "pre"), codeInside: !!a.querySelector("code")
            })),
            preText: Array.from(answer.querySelectorAll(".ai-sidebar-text pre")).map((p) => p.innerText),
            plainCode: Array.from(answer.querySelectorAll(".ai-sidebar-text code"))
                .filter((c) => !c.closest("pre") && !c.closest(".ai-sidebar-node-link")).map((c) => c.innerText),
            sources: Array.from(answer.querySelectorAll(".ai-sidebar-sources .ai-sidebar-source")).map((s) => ({
                tag: s.tagName.toLowerCase(), text: s.innerText.trim(), id: s.getAttribute("data-node-id"),
                type: s.getAttribute("data-node-type"),
                afterCard: !!(s.closest(".ai-sidebar-sources").previousElementSibling || { matches: () => false })
                    .matches(".ai-sidebar-tool")
            })),
            sourcesInside: Array.from(answer.querySelectorAll(".ai-sidebar-sources")).every((line) =>
                line.getBoundingClientRect().right <= document.querySelector(".ai-sidebar-messages")
                    .getBoundingClientRect().right + 0.5)
        };
    });
}

/** The text of the help the Help sidebar shows now. */
async function helpShown(page) {
    return page.evaluate(() => Array.from(document.querySelectorAll("#red-ui-sidebar .red-ui-help"))
        .filter((el) => el.offsetParent).map((el) => el.innerText).join("\n"));
}

// Node ids and names in an answer are links that reveal the node (its tab opened first); code blocks and inline
// flow JSON stay as they are; the sources of a knowledge tool are links under its card: help opens the Help
// sidebar, a node reveals it, a node deleted in the editor reads as plain text. Env: QUESTIONS (a docs question,
// then a workspace one), LINK_ID (a node on another tab, named in the first answer), GONE_ID (deleted in the editor
// before the second question).
async function nodeLinksMode(page, result) {
    const questions = JSON.parse(env.QUESTIONS);
    await page.setViewportSize({ width: 1280, height: 720 });
    await editor.showTab(page, env.TAB_ID);
    await editor.newChat(page);
    await editor.ask(page, questions[0]);
    result.first = await linkState(page);
    await editor.screenshot(page, result, "sidebar-node-links.png");
    await page.locator(".ai-sidebar-message-assistant").last()
        .locator(".ai-sidebar-text .ai-sidebar-node-link[data-node-id='" + env.LINK_ID + "']").first().click();
    await page.waitForFunction((id) => RED.workspaces.active() === RED.nodes.node(id).z, env.LINK_ID,
        { timeout: 5000 });
    result.afterReveal = await page.evaluate(() => RED.workspaces.active());
    await page.evaluate(() => RED.sidebar.show("ai-sidebar"));
    await page.locator(".ai-sidebar-message-assistant").last().locator(".ai-sidebar-source-help").first().click();
    await page.waitForFunction(() => Array.from(document.querySelectorAll("#red-ui-sidebar .red-ui-help"))
        .some((el) => el.offsetParent), null, { timeout: 5000 });
    result.help = await helpShown(page);

    await page.evaluate((id) => {
        RED.workspaces.show(RED.nodes.node(id).z);
        RED.view.select({ nodes: [RED.nodes.node(id)] });
        RED.actions.invoke("core:delete-selection");
        RED.sidebar.show("ai-sidebar");
    }, env.GONE_ID);
    result.goneDeleted = await page.evaluate((id) => !RED.nodes.node(id), env.GONE_ID);
    await editor.showTab(page, env.TAB_ID);
    await editor.ask(page, questions[1]);
    result.second = await linkState(page);
    await editor.screenshot(page, result, "sidebar-sources.png");
    const nodeSource = page.locator(".ai-sidebar-message-assistant").last().locator("a.ai-sidebar-source-node")
        .first();
    result.revealedSource = await nodeSource.getAttribute("data-node-id");
    await nodeSource.click();
    await page.waitForFunction((id) => {
        const node = RED.nodes.node(id);
        return RED.workspaces.active() === (node ? node.z : id);
    }, result.revealedSource, { timeout: 5000 });
    result.afterSource = await page.evaluate(() => RED.workspaces.active());
    await page.evaluate(() => RED.sidebar.show("ai-sidebar"));

    const before = await editor.sidebarWidth(page);
    try {
        result.narrowWidth = await editor.resizeSidebar(page, Number(env.NARROW_WIDTH));
        result.narrow = await linkState(page);
        await editor.detailScreenshot(page.locator("#red-ui-sidebar"), result, "sidebar-sources-narrow.png");
    } finally {
        await editor.resizeSidebar(page, before);
    }
}

module.exports.MODES["node-links"] = nodeLinksMode;

/** The conversation list while searching: the field, the rows (name, snippet, marked words) or its sentence. */
async function searchState(page) {
    return page.evaluate(() => {
        const drawer = document.querySelector(".ai-sidebar-sessions");
        const box = drawer.getBoundingClientRect();
        return {
            open: !!drawer.offsetParent,
            fieldLabel: document.querySelector(".ai-sidebar-session-search").getAttribute("aria-label"),
            rows: Array.from(drawer.querySelectorAll(".ai-sidebar-session-hit")).map((row) => ({
                id: row.getAttribute("data-session-id"),
                name: row.querySelector(".ai-sidebar-session-label").innerText.trim(),
                snippet: row.querySelector(".ai-sidebar-session-snippet").innerText.trim(),
                marked: Array.from(row.querySelectorAll("mark")).map((m) => m.innerText),
                inside: row.getBoundingClientRect().right <= box.right + 0.5
            })),
            note: Array.from(drawer.querySelectorAll(".ai-sidebar-note, .ai-sidebar-error"))
                .map((n) => n.innerText.trim()).join(" ")
        };
    });
}

async function searchFor(page, query) {
    // An empty field lists the conversations again, so the rows after the fill are this query's.
    await page.fill(".ai-sidebar-session-search", "");
    await page.waitForFunction(() => !document.querySelector(".ai-sidebar-session-hit"), null, { timeout: 5000 });
    await page.fill(".ai-sidebar-session-search", query);
    await page.waitForFunction(() => document.querySelector(".ai-sidebar-session-hit, .ai-sidebar-sessions " +
        ".ai-sidebar-note, .ai-sidebar-sessions .ai-sidebar-error"), null, { timeout: 15000 });
    return searchState(page);
}

/** Which message is marked as found, and whether it is in view (the list not simply at its end). */
async function foundState(page) {
    return page.evaluate(() => {
        const list = document.querySelector(".ai-sidebar-messages");
        const found = document.querySelector(".ai-sidebar-message-found");
        const box = list.getBoundingClientRect();
        const r = found ? found.getBoundingClientRect() : null;
        return {
            text: found ? found.innerText.trim() : null,
            inView: !!r && r.top >= box.top - 1 && r.top < box.bottom,
            atBottom: list.scrollHeight - list.scrollTop - list.clientHeight < 2,
            questions: document.querySelectorAll(".ai-sidebar-message-user").length
        };
    });
}

// Search conversations by text: a word of an old answer finds its conversation, which opens at that answer; no
// match and a failed search say so in a sentence. Env: QUESTIONS (asked in one conversation, its first answer
// holds WORD), OTHER (asked in a second one).
async function searchMode(page, result) {
    const questions = JSON.parse(env.QUESTIONS);
    await page.setViewportSize({ width: 1280, height: 720 });
    await editor.showTab(page, env.TAB_ID);
    await editor.newChat(page);
    for (const question of questions) {
        await editor.ask(page, question);
    }
    result.first = await page.evaluate(() => localStorage.getItem(Object.keys(localStorage)
        .filter((k) => k.startsWith("node-red-contrib-ai-sidebar.sessionId"))[0]));
    await editor.newChat(page);
    await editor.ask(page, env.OTHER);

    await page.click(".ai-sidebar-session-button");
    await page.waitForSelector(".ai-sidebar-sessions", { state: "visible" });
    result.found = await searchFor(page, env.WORD);
    await editor.screenshot(page, result, "sidebar-conversation-search.png");
    await page.click(".ai-sidebar-session-hit[data-session-id='" + result.first + "'] .ai-sidebar-session-main");
    await page.waitForFunction(() => document.querySelector(".ai-sidebar-message-found"), null, { timeout: 15000 });
    result.opened = await foundState(page);
    result.openedSession = await page.evaluate(() => localStorage.getItem(Object.keys(localStorage)
        .filter((k) => k.startsWith("node-red-contrib-ai-sidebar.sessionId"))[0]));
    await editor.screenshot(page, result, "sidebar-conversation-search-opened.png");

    await page.click(".ai-sidebar-session-button");
    result.noMatch = await searchFor(page, "xylophonequartz");
    await page.route("**/ai-sidebar/search", (route) => route.fulfill({ status: 503, contentType: "application/json",
        body: JSON.stringify({ error: { code: "memory_unavailable", message: "The memory database is not open." } })
    }));
    result.failed = await searchFor(page, env.WORD + " again");
    await page.unroute("**/ai-sidebar/search");
    await page.keyboard.press("Escape");

    const before = await editor.sidebarWidth(page);
    try {
        result.narrowWidth = await editor.resizeSidebar(page, Number(env.NARROW_WIDTH));
        await page.click(".ai-sidebar-session-button");
        await page.waitForSelector(".ai-sidebar-sessions", { state: "visible" });
        result.narrow = await searchFor(page, env.WORD);
        await editor.detailScreenshot(page.locator("#red-ui-sidebar"), result, "sidebar-conversation-search-narrow.png");
        await page.keyboard.press("Escape");
    } finally {
        await editor.resizeSidebar(page, before);
    }
}

module.exports.MODES.search = searchMode;

// "Attach recent debug messages" in the chip: the latest Debug sidebar messages of the selected nodes (here none
// selected: of the open flow) go with the next question, listed above the input and in the question's context
// line; on a flow without messages a notification says so. The Debug sidebar is never opened. Env: INJECT_ID
// (wired to a debug node on TAB_ID), COUNT (how often it fires), EMPTY_TAB (a tab without messages), QUESTION.
async function recentDebugMode(page, result) {
    const count = Number(env.COUNT);
    await page.setViewportSize({ width: 1280, height: 720 });
    await editor.showTab(page, env.EMPTY_TAB);
    await editor.newChat(page);
    await page.click(".ai-sidebar-context-recent-debug");
    await page.waitForSelector(".red-ui-notification", { timeout: 5000 });
    result.noneNotice = (await page.locator(".red-ui-notification").last().innerText()).trim();
    result.noneAttached = await page.locator(".ai-sidebar-context-debug-item").count();

    await editor.showTab(page, env.TAB_ID);
    const shown = () => document.querySelectorAll("#red-ui-sidebar .red-ui-debug-msg").length;
    const already = await page.evaluate(shown);
    for (let i = 0; i < count; i++) {
        await page.evaluate((id) => $.ajax({ url: "inject/" + id, type: "POST" }), env.INJECT_ID);
        // One message at a time: the next inject once this one's message is in the Debug sidebar.
        await page.waitForFunction((n) => document.querySelectorAll("#red-ui-sidebar .red-ui-debug-msg").length >= n,
            already + i + 1, { timeout: 15000 });
    }
    await page.evaluate(() => RED.sidebar.show("ai-sidebar"));
    await page.waitForFunction((n) => {
        const sidebar = window.NodeRedAiSidebar;
        return document.querySelector(".ai-sidebar") && sidebar &&
            document.querySelectorAll("#red-ui-sidebar .red-ui-debug-msg").length >= n;
    }, count, { timeout: 15000 });
    result.buttonLabel = await page.getAttribute(".ai-sidebar-context-recent-debug", "aria-label");
    await page.click(".ai-sidebar-context-recent-debug");
    await page.waitForSelector(".ai-sidebar-context-debug-item", { timeout: 5000 });
    result.attached = await page.locator(".ai-sidebar-context-debug-item").allInnerTexts();
    result.chip = (await page.locator(".ai-sidebar-context").innerText()).trim();
    await editor.screenshot(page, result, "sidebar-recent-debug-attached.png");
    const before = await editor.sidebarWidth(page);
    try {
        result.narrowWidth = await editor.resizeSidebar(page, Number(env.NARROW_WIDTH));
        result.narrowChip = await page.evaluate(() => {
            const chip = document.querySelector(".ai-sidebar-context").getBoundingClientRect();
            const button = document.querySelector(".ai-sidebar-context-recent-debug").getBoundingClientRect();
            const composer = document.querySelector(".ai-sidebar-composer").getBoundingClientRect();
            return { buttonInside: button.right <= chip.right + 0.5 && button.width > 0,
                chipInside: chip.right <= composer.right + 0.5 };
        });
        await editor.detailScreenshot(page.locator(".ai-sidebar-composer"), result,
            "sidebar-recent-debug-narrow.png");
    } finally {
        await editor.resizeSidebar(page, before);
    }
    await editor.ask(page, env.QUESTION);
    result.sent = await sentContexts(page);
    result.attachedAfterSend = await page.locator(".ai-sidebar-context-debug-item").count();
}

module.exports.MODES["recent-debug"] = recentDebugMode;
