// Recovery, driven by sidebar_features.js (MODE=retry): a failed answer puts the question back and offers Retry,
// which resends the same request; a cut-off answer offers Retry too; a reload shows the faults as sentences.
// MODE=reconnect: the service goes away while an answer streams and comes back (see reconnectMode); MODE=restart:
// it is restarted by `make run` (see restartMode); MODE=frozen: it stops answering without going away (frozenMode).
// Input (env): TAB_ID, QUESTIONS (JSON: [failing question, question whose answer is cut off]) or QUESTION.
"use strict";
const editor = require("./editor");

const env = process.env;

/** The last answer: its text, error lines and Retry buttons, and what the input holds. */
async function lastAnswer(page) {
    return page.evaluate(() => {
        const answers = document.querySelectorAll(".ai-sidebar-message-assistant");
        const answer = answers[answers.length - 1];
        return {
            text: answer.innerText.trim(),
            errors: Array.from(answer.querySelectorAll(".ai-sidebar-error")).map((e) => e.innerText.trim()),
            retry: Array.from(answer.querySelectorAll(".ai-sidebar-retry")).map((b) => b.innerText.trim()),
            input: document.querySelector(".ai-sidebar-input").value
        };
    });
}

async function retryMode(page, result, context, record) {
    const [failing, cutOff] = JSON.parse(env.QUESTIONS);
    const bodies = [];
    page.on("request", (request) => {
        if (request.url().includes("/ai-sidebar/stream-chat") && request.method() === "POST") {
            bodies.push(JSON.parse(request.postData()));
        }
    });
    await page.setViewportSize({ width: 1280, height: 720 });
    await editor.showTab(page, env.TAB_ID);
    await page.evaluate(() => RED.view.select(""));
    await editor.newChat(page);
    await editor.ask(page, failing);
    result.failed = await lastAnswer(page);
    await editor.screenshot(page, result, "sidebar-retry-failed.png");

    await page.locator(".ai-sidebar-retry").last().click();
    await editor.waitIdle(page);
    result.retried = await lastAnswer(page);
    await editor.screenshot(page, result, "sidebar-retry-answered.png");

    await editor.ask(page, cutOff);
    result.cutOff = await lastAnswer(page);
    await editor.screenshot(page, result, "sidebar-retry-cut-off.png");
    result.bodies = bodies;

    const again = await editor.openEditor(context, env.EDITOR_URL, record,
        env.USERNAME ? { username: env.USERNAME, password: env.PASSWORD } : null);
    await again.setViewportSize({ width: 1280, height: 720 });
    await editor.showTab(again, env.TAB_ID);
    await again.waitForFunction(() => document.querySelectorAll(".ai-sidebar-message").length >= 4 &&
        !document.querySelector(".ai-sidebar-loading"), null, { timeout: 15000 });
    result.reloaded = await again.evaluate(() => Array.from(
        document.querySelectorAll(".ai-sidebar-message-assistant .ai-sidebar-error, .ai-sidebar-message-assistant .ai-sidebar-note"))
        .map((e) => e.innerText.trim()));
    await again.evaluate(() => {
        const messages = document.querySelector(".ai-sidebar-messages");
        messages.scrollTop = messages.scrollHeight;
    });
    await editor.screenshot(again, result, "sidebar-retry-reloaded.png");
}

function stage(name) {
    process.stdout.write(JSON.stringify({ stage: name }) + "\n");
}

/** The banner as shown: its line, its role, how many start commands it lists, whether it says it reconnects. */
async function bannerView(page) {
    return page.evaluate(() => {
        const banner = document.querySelector(".ai-sidebar-status");
        return {
            text: banner.querySelector(":scope > span").innerText.trim(),
            role: banner.getAttribute("role"),
            commands: banner.querySelectorAll(".ai-sidebar-status-command").length,
            reconnecting: banner.classList.contains("ai-sidebar-status-reconnecting")
        };
    });
}

// The service goes away while an answer streams (the test kills it on "streaming", as a crash would; a supervisor
// restarts it): the answer says it ended early, the tab says it reconnects (no advice on starting the service yet),
// asks GET ai-sidebar/service-status on its own, and drops the line once the service is back (the test starts it
// on "reconnecting"), with no Send and no click. Every admin request is recorded with its status.
async function reconnectMode(page, result) {
    const requests = [];
    page.on("response", (response) => {
        const url = new URL(response.url());
        const at = url.pathname.indexOf("/ai-sidebar/");
        if (at !== -1) {
            requests.push({ method: response.request().method(), path: url.pathname.slice(at + 12),
                status: response.status() });
        }
    });
    await page.setViewportSize({ width: 1280, height: 720 });
    await editor.showTab(page, env.TAB_ID);
    await page.waitForSelector(".ai-sidebar-scenario", { state: "visible", timeout: 20000 });
    await editor.newChat(page);
    await editor.waitIdle(page);
    await page.fill(".ai-sidebar-input", env.QUESTION);
    await page.click(".ai-sidebar-send");
    await page.waitForFunction(() => {
        const answers = document.querySelectorAll(".ai-sidebar-message-assistant");
        return answers.length && answers[answers.length - 1].innerText.indexOf("word3 ") !== -1;
    }, null, { timeout: 30000 });
    await editor.screenshot(page, result, "sidebar-reconnect-streaming.png");
    stage("streaming");
    await page.waitForSelector(".ai-sidebar-status.ai-sidebar-status-reconnecting", { state: "visible",
        timeout: 30000 });
    await editor.waitIdle(page);
    result.reconnecting = await bannerView(page);
    result.cutOff = await lastAnswer(page);
    await editor.screenshot(page, result, "sidebar-reconnecting.png");
    result.requestsBeforeRestart = requests.length;
    stage("reconnecting");
    await page.waitForSelector(".ai-sidebar-status", { state: "hidden", timeout: 120000 });
    await editor.screenshot(page, result, "sidebar-reconnected.png");
    // The session list is read again once the service is back (the cut-off question may have been saved).
    const readAgain = () => {
        const failed = requests.map((r) => r.path === "sessions" && r.status === 502).lastIndexOf(true);
        return requests.slice(failed + 1).some((r) => r.path === "sessions" && r.status === 200);
    };
    const deadline = Date.now() + 15000;
    while (Date.now() < deadline && !readAgain()) {
        await page.waitForTimeout(200);
    }
    result.requests = requests;
}

// MODE=restart, under a supervisor outside Node-RED (AI_SIDEBAR_SERVICE_SUPERVISED, as `make run` sets it): the
// test kills the service on "ready"; a question finds it down, the tab says it reconnects and, still down after
// 15 s, names what restarts it (no pip or docker commands); the test starts it again on "advised", and the banner's
// time of going is reported (`hiddenAt`, ms since 1970) with what it showed.
/** The tab shown, a new chat open and idle; then the "ready" stage (the test acts on the service). */
async function readyForAQuestion(page) {
    await page.setViewportSize({ width: 1280, height: 720 });
    await editor.showTab(page, env.TAB_ID);
    await page.waitForSelector(".ai-sidebar-scenario", { state: "visible", timeout: 20000 });
    await editor.newChat(page);
    await editor.waitIdle(page);
    stage("ready");
}

async function restartMode(page, result) {
    await readyForAQuestion(page);
    await page.fill(".ai-sidebar-input", env.QUESTION);
    await page.click(".ai-sidebar-send");
    await page.waitForSelector(".ai-sidebar-status.ai-sidebar-status-reconnecting", { state: "visible",
        timeout: 30000 });
    result.reconnecting = await bannerView(page);
    // The question's own answer says what the banner says: it is being started again (not "Start it").
    await page.waitForSelector(".ai-sidebar-messages .ai-sidebar-error", { state: "visible", timeout: 30000 });
    result.failedAnswer = (await page.locator(".ai-sidebar-messages .ai-sidebar-error").last().innerText()).trim();
    // The advice comes once it stayed down for 15 s (service-watch.js ADVICE_AFTER_MS).
    await page.waitForSelector(".ai-sidebar-status:not(.ai-sidebar-status-reconnecting) .ai-sidebar-status-supervisor",
        { state: "visible", timeout: 40000 });
    result.advised = await bannerView(page);
    result.advisedHelp = (await page.locator(".ai-sidebar-status-help").innerText()).trim();
    await editor.screenshot(page, result, "sidebar-restart-advised.png");
    stage("advised");
    await page.waitForSelector(".ai-sidebar-status", { state: "hidden", timeout: 60000 });
    result.hiddenAt = Date.now();
    await editor.screenshot(page, result, "sidebar-restart-back.png");
}

// The service is frozen (the test stops its process on "ready") before the question: its port still accepts the
// connection, so nothing fails, and no byte comes. After 20 s of silence the sidebar asks whether the service
// answers (its /healthz, 5 s at most): the banner says it does not. The test lets it go on ("frozen"): the banner
// goes, and the question, which waited all along, is answered.
async function frozenMode(page, result) {
    await readyForAQuestion(page);
    const sent = Date.now();
    await page.fill(".ai-sidebar-input", env.QUESTION);
    await page.click(".ai-sidebar-send");
    await page.waitForSelector(".ai-sidebar-status", { state: "visible", timeout: 60000 });
    result.bannerAfterMs = Date.now() - sent;
    result.frozen = await bannerView(page);
    await editor.screenshot(page, result, "sidebar-frozen.png");
    stage("frozen");
    await page.waitForSelector(".ai-sidebar-status", { state: "hidden", timeout: 60000 });
    await editor.waitIdle(page);
    result.answer = await lastAnswer(page);
    await editor.screenshot(page, result, "sidebar-frozen-back.png");
}

module.exports = { MODES: { "retry": retryMode, "reconnect": reconnectMode, "restart": restartMode,
    "frozen": frozenMode } };
