"""All ten shipped languages: natural phrasings force the right tool, ordinary sentences force nothing, the answer
language reaches the model in that language's own terms, the scenarios route serves every language and region
variant, and every system prompt placeholder is filled with readable text through the real pipeline.

Decisions the keyword tables encode (the locale files follow them):

- "diagnostics" means Node-RED's diagnostics report (versions, OS, memory, modules). Asking to *diagnose* a
  particular error ("diagnose this error", "帮我诊断一下这个错误", "Diagnose eines Fehlers") is troubleshooting, not a
  request for that report, and forces nothing; the agent can still choose the tool.
- A "tab" next to "this"/"current" is usually the browser tab ("if I close this tab ..."), so only "selected tab"
  forces get_flow.
- "Node-RED version", "Node.js", "settings.js", electric current, cash flow, business "workflow"/"process" and
  "current" in "currently set" force nothing.
"""

from __future__ import annotations

import json
import re

import pytest

from service.chat.prompts import describe_flow, describe_nodes
from service.chat.scenarios import PLACEHOLDER, ScenarioCatalog, load_base, load_language, normalize
from service.nodered.settings import NodeRedSettings
from service.requests import SelectedNode
from service.settings import REPO_ROOT
from service.web.app import create_app
from tests.support.nodered import NODERED_HOME, free_port
from tests.support.sse import read_events

LOCALES = REPO_ROOT / "locales"
BASE = load_base(LOCALES / "scenarios.json")
SCENARIO_KEYS = list(BASE.scenarios)
LANGUAGES = ["en-US", "zh-CN", "zh-TW", "ja", "ko", "es-ES", "pt-BR", "fr", "de", "ru"]
TOOLS = ("get_flow", "get_node_info", "get_settings", "get_diagnostics")
NODERED_VERSION = json.loads((NODERED_HOME / "package.json").read_text())["version"]

FORCED: dict[str, dict[str, list[str]]] = {
    "en-US": {
        "get_flow": ["Walk me through what this flow does",
                     "Is anything in the selected flow likely to break?",
                     "Why does the current flow never reach the debug node?",
                     "Could you please review this flow for missing error handling?"],
        "get_node_info": ["Could you check how this node is configured?",
                          "Explain these nodes to me, please",
                          "Why is the current node showing a red triangle?",
                          "Are the selected nodes wired correctly?"],
        "get_settings": ["Is my current configuration safe to expose on the network?",
                         "Check the runtime settings and tell me if anything is insecure",
                         "What are the current settings for context storage?"],
        "get_diagnostics": ["Could you look at the diagnostics and tell me what needs attention?",
                            "Pull the diagnostic report, please",
                            "What does the diagnostic info say about memory?"],
    },
    "zh-CN": {
        "get_flow": ["帮我看看当前流程有什么问题", "这个流程是做什么的？", "请分析一下选中的流程",
                     "所选流程里为什么 debug 节点没有输出？"],
        "get_node_info": ["帮我检查一下选中的节点配置得对不对", "当前节点为什么一直显示红色三角？",
                          "请解释一下这些节点的作用"],
        "get_settings": ["当前配置暴露在公网上安全吗？", "请检查一下运行时设置有没有不安全的地方", "帮我看下现在的配置"],
        "get_diagnostics": ["请生成一份诊断报告", "帮我看一下诊断信息里内存占用高不高", "请运行诊断，看看有什么需要注意的"],
    },
    "zh-TW": {
        "get_flow": ["幫我解釋一下目前的流程", "這個流程在做什麼？", "請分析所選流程有沒有潛在問題",
                     "目前流程裡為什麼 debug 節點沒有輸出？"],
        "get_node_info": ["這個節點是做什麼用的？", "幫我檢查選取的節點設定對不對", "請說明這些節點的作用",
                          "目前節點為什麼一直顯示紅色三角形？"],
        "get_settings": ["請看一下目前的設定", "目前的設定放到網路上安全嗎？", "幫我檢查執行階段設定有沒有不安全的地方"],
        "get_diagnostics": ["請給我診斷資訊", "幫我產生一份診斷報告", "請執行診斷，看看有哪些需要注意的地方"],
    },
    "ja": {
        "get_flow": ["現在のフローを説明してください", "このフローは何をしていますか？",
                     "選択したフローに問題がないか確認してもらえますか", "このフローのどこでエラーが起きているか見て"],
        "get_node_info": ["このノードは何をしていますか？", "選択中のノードの設定を確認してください",
                          "これらのノードの役割を教えて", "現在のノードに赤い三角が出るのはなぜ？"],
        "get_settings": ["現在の設定を見せてください", "今のランタイム設定でネットワークに公開しても安全ですか？",
                         "現在の設定に問題がないかチェックして"],
        "get_diagnostics": ["診断情報を見せてください", "診断レポートを作成して、注意すべき点を教えて",
                            "システム診断を実行してもらえますか"],
    },
    "ko": {
        "get_flow": ["현재 플로우 설명해 줘", "이 플로우는 무슨 일을 하나요?", "선택한 플로우에 문제가 있는지 확인해 주세요",
                     "지금 플로우에서 debug 노드에 아무것도 안 찍히는 이유가 뭐예요?"],
        "get_node_info": ["이 노드는 뭐 하는 노드예요?", "선택한 노드 설정이 맞는지 봐 주세요",
                          "현재 노드에 빨간 삼각형이 뜨는 이유가 뭔가요?", "이 노드들 역할 좀 알려 줘"],
        "get_settings": ["현재 설정 좀 보여 줘", "현재 설정을 네트워크에 공개해도 안전한가요?",
                         "런타임 설정에 보안상 문제가 없는지 확인해 주세요"],
        "get_diagnostics": ["진단 정보 보여 주세요", "진단 보고서를 만들어서 주의할 점을 알려 줘", "시스템 진단을 실행해 주세요"],
    },
    "es-ES": {
        "get_flow": ["Explícame este flujo, por favor",
                     "¿Puedes revisar el flujo seleccionado y decirme si algo puede fallar?",
                     "¿Por qué este flujo no llega al nodo debug?", "Analiza el flujo actual"],
        "get_node_info": ["¿Qué hace el nodo seleccionado?", "¿Podrías revisar cómo están configurados estos nodos?",
                          "¿Por qué el nodo actual muestra un triángulo rojo?"],
        "get_settings": ["¿Es segura mi configuración actual si expongo el editor en la red?",
                         "Revisa los ajustes del runtime y dime si hay algo inseguro",
                         "¿Me enseñas la configuracion actual?"],
        "get_diagnostics": ["Ejecuta un diagnóstico y dime qué hay que revisar", "Muéstrame el informe de diagnóstico",
                            "¿Qué dicen los diagnósticos sobre la memoria?"],
    },
    "pt-BR": {
        "get_flow": ["Explique o fluxo atual", "O que esse fluxo faz?",
                     "Pode revisar o fluxo selecionado e ver se algo pode falhar?",
                     "Por que neste fluxo a mensagem não chega no nó debug?"],
        "get_node_info": ["O que esse nó faz?", "Pode conferir a configuração do nó selecionado?",
                          "Explique estes nós pra mim", "Por que o nó atual está com um triângulo vermelho?"],
        "get_settings": ["Mostre a configuração atual",
                         "Minhas configurações atuais são seguras para expor o editor na rede?",
                         "Verifique as configurações do runtime e me diga se tem algo inseguro"],
        "get_diagnostics": ["Rode um diagnóstico e me diga o que precisa de atenção",
                            "Mostre o relatório de diagnóstico", "O que os diagnósticos dizem sobre a memória?"],
    },
    "fr": {
        "get_flow": ["Explique-moi ce flux", "Que fait le flux actuel ?",
                     "Peux-tu vérifier le flux sélectionné et me dire ce qui risque de planter ?",
                     "Pourquoi ce flux n'arrive jamais au nœud debug ?"],
        "get_node_info": ["Que fait ce nœud ?", "Pouvez-vous vérifier la configuration des nœuds sélectionnés ?",
                          "Explique-moi ces noeuds", "Pourquoi le nœud actuel affiche un triangle rouge ?"],
        "get_settings": ["Montre-moi la configuration actuelle",
                         "Ma configuration actuelle est-elle sûre si j'expose l'éditeur sur le réseau ?",
                         "Vérifie les paramètres du runtime et dis-moi si quelque chose n'est pas sécurisé"],
        "get_diagnostics": ["Lance un diagnostic et dis-moi ce qui mérite attention",
                            "Affiche le rapport de diagnostic", "Que disent les diagnostics sur la mémoire ?"],
    },
    "de": {
        "get_flow": ["Erklär mir den aktuellen Flow", "Was macht dieser Flow?",
                     "Kannst du den ausgewählten Flow prüfen, ob etwas schiefgehen kann?",
                     "Warum kommt in diesem Flow nichts am Debug-Node an?", "Ist der aktuelle Flow so in Ordnung?"],
        "get_node_info": ["Was macht dieser Node?", "Können Sie die Konfiguration der ausgewählten Nodes prüfen?",
                          "Warum zeigt der aktuelle Node ein rotes Dreieck?", "Erklär mir bitte diesen Node"],
        "get_settings": ["Zeig mir die aktuelle Konfiguration",
                         "Sind meine aktuellen Einstellungen sicher, wenn der Editor im Netz erreichbar ist?",
                         "Prüf bitte die Runtime-Einstellungen auf Sicherheitsprobleme"],
        "get_diagnostics": ["Zeig mir den Diagnosebericht", "Was sagen die Diagnosedaten über den Speicherverbrauch?",
                            "Starte bitte eine Systemdiagnose"],
    },
    "ru": {
        "get_flow": ["Объясни текущий поток", "Что делает этот поток?",
                     "Проверь, пожалуйста, выбранный поток: что в нём может сломаться?",
                     "Почему в этом потоке сообщения не доходят до узла debug?"],
        "get_node_info": ["Что делает этот узел?", "Можете проверить настройки выбранных узлов?",
                          "Почему у текущего узла красный треугольник?", "Объясни, что делает эта нода"],
        "get_settings": ["Покажи текущие настройки",
                         "Безопасна ли текущая конфигурация, если открыть редактор в сеть?",
                         "Проверь настройки среды выполнения на предмет уязвимостей"],
        "get_diagnostics": ["Запусти диагностику и скажи, на что обратить внимание", "Покажи диагностический отчёт",
                            "Что говорят данные диагностики о памяти?"],
    },
}

ORDINARY: dict[str, list[str]] = {
    "en-US": [
        "How do I split an array into separate messages and join them again?",
        "What's the difference between msg.payload and msg.topic?",
        "Should I upgrade to the current Node-RED version before installing Dashboard 2?",
        "Is the current Node.js LTS supported by Node-RED 4?",
        "Where do I find settings.js on a Raspberry Pi?",
        "Can you help me diagnose this error: TypeError: Cannot read properties of undefined (reading 'temp')?",
        "My energy meter reports the current in amps over Modbus; how do I scale the value?",
        "Show the current flowing through the pump motor on a dashboard gauge",
        "How do I calculate monthly cash flow from CSV rows in a function node?",
        "If I close this tab, will my flows stop running?",
        "How can I keep a counter in flow context across deploys?",
        "Why does my http request node get a 401 from the API?",
        "What's the best way to run Node-RED in Docker with a persistent /data volume?",
        "Can I use async/await inside a function node?",
        "How do I install node-red-contrib-modbus from the palette manager?",
        "Is Node-RED a good way to learn this flow-based programming style?",
        "Thanks, that fixed it!",
        "I'll grab a coffee and try again later.",
        "How do I protect the editor with a username and password?",
        "Which node should I use to let only one message per second through?",
    ],
    "zh-CN": [
        "如何把数组拆成多条消息，处理完再合并？",
        "msg.payload 和 msg.topic 有什么区别？",
        "当前 Node-RED 版本支持 Node.js 22 吗？",
        "settings.js 文件在树莓派上的什么位置？",
        "帮我诊断一下这个错误：TypeError: Cannot read properties of undefined",
        "电表通过 Modbus 上报的当前电流怎么换算成安培？",
        "公司的审批流程能用 Node-RED 自动化吗？",
        "现金流报表能不能用 function 节点按月汇总？",
        "关闭浏览器的当前标签页以后，流程还会继续运行吗？",
        "怎么在 flow 上下文里保存一个计数器？",
        "http request 节点返回 401 是什么原因？",
        "用 Docker 部署 Node-RED 时怎么持久化 /data 目录？",
        "function 节点里可以用 async/await 吗？",
        "怎么从节点管理器安装 node-red-contrib-modbus？",
        "谢谢，问题解决了！",
        "我先去吃个饭，回来再试。",
        "怎么给编辑器加上用户名和密码？",
        "医院的诊断系统能通过 HL7 接入 Node-RED 吗？",
        "每秒只放行一条消息应该用哪个节点？",
        "这个报错诊断起来很麻烦，有什么调试技巧？",
    ],
    "zh-TW": [
        "怎麼把陣列拆成多個訊息，處理完再合併？",
        "msg.payload 和 msg.topic 有什麼差別？",
        "目前的 Node-RED 版本支援 Node.js 22 嗎？",
        "settings.js 在樹莓派上放在哪裡？",
        "可以幫我診斷一下這個錯誤嗎？TypeError: Cannot read properties of undefined",
        "電表透過 Modbus 回報的目前電流要怎麼換算？",
        "公司的請款流程可以用 Node-RED 自動化嗎？",
        "現金流量表可以用 function 節點按月加總嗎？",
        "如果把這個分頁關掉，流程還會繼續跑嗎？",
        "要怎麼在 flow context 裡存一個計數器？",
        "http request 節點回傳 401 是什麼原因？",
        "用 Docker 部署 Node-RED 時，/data 目錄要怎麼持久化？",
        "function 節點裡可以用 async/await 嗎？",
        "要怎麼從節點管理安裝 node-red-contrib-modbus？",
        "謝謝，問題解決了！",
        "我先去吃個飯，等一下再試。",
        "要怎麼幫編輯器加上帳號密碼？",
        "醫院的診斷系統可以透過 HL7 接進 Node-RED 嗎？",
        "每秒只放行一則訊息要用哪個節點？",
        "inject 節點目前設定的間隔要怎麼改？",
    ],
    "ja": [
        "配列を個別のメッセージに分割して、あとでまとめ直すには？",
        "msg.payload と msg.topic の違いは何ですか？",
        "現在のNode-REDのバージョンはNode.js 22に対応していますか？",
        "Raspberry Pi では settings.js はどこにありますか？",
        "このエラーの原因を診断してもらえますか？TypeError: Cannot read properties of undefined",
        "電力計から Modbus で取得した電流値をアンペアに換算したいです",
        "社内の承認フローを Node-RED で自動化できますか？",
        "キャッシュフローを function ノードで月ごとに集計できますか？",
        "ブラウザのこのタブを閉じても、フローは動き続けますか？",
        "フローコンテキストにカウンターを保存するには？",
        "http request ノードが 401 を返すのはなぜですか？",
        "Docker で Node-RED を動かすとき、/data を永続化する方法は？",
        "function ノードで async/await は使えますか？",
        "パレットの管理から node-red-contrib-modbus をインストールするには？",
        "ありがとうございます、解決しました！",
        "ちょっと休憩してからもう一度試してみます。",
        "エディタにユーザー名とパスワードを設定したいです",
        "病院の画像診断システムと Node-RED を HL7 で連携できますか？",
        "1秒に1件だけメッセージを通すにはどのノードを使いますか？",
        "inject ノードに現在設定されている間隔を変えたいです",
    ],
    "ko": [
        "배열을 개별 메시지로 나눴다가 다시 합치려면 어떻게 하나요?",
        "msg.payload와 msg.topic의 차이가 뭐예요?",
        "현재 Node-RED 버전에서 Node.js 22를 지원하나요?",
        "현재 노드 버전이 18인데 Node-RED 4를 설치할 수 있나요?",
        "라즈베리 파이에서 settings.js 파일은 어디에 있어요?",
        "이 에러 원인 좀 진단해 줄 수 있어요? TypeError: Cannot read properties of undefined",
        "전력량계에서 Modbus로 읽은 현재 전류 값을 암페어로 바꾸려면?",
        "회사 결재 플로우를 Node-RED로 자동화할 수 있을까요?",
        "브라우저에서 현재 탭을 닫아도 플로우는 계속 돌아가나요?",
        "flow 컨텍스트에 카운터를 저장하려면 어떻게 해요?",
        "http request 노드가 401을 반환하는 이유가 뭘까요?",
        "Docker로 Node-RED를 돌릴 때 /data를 영구 저장하려면?",
        "function 노드에서 async/await 써도 되나요?",
        "라즈베리 파이 노드를 설치했는데 GPIO 핀이 안 보여요",
        "감사합니다, 해결됐어요!",
        "잠깐 쉬었다가 다시 해 볼게요.",
        "inject 노드에 현재 설정된 반복 간격을 바꾸려면 어떻게 하나요?",
        "병원 진단 장비 데이터를 Node-RED로 받을 수 있나요?",
        "1초에 메시지 하나만 통과시키려면 어떤 노드를 써야 하나요?",
        "편집기에 사용자 이름과 비밀번호를 설정하고 싶어요",
    ],
    "es-ES": [
        "¿Cómo divido un array en varios mensajes y luego los vuelvo a juntar?",
        "¿Qué diferencia hay entre msg.payload y msg.topic?",
        "¿La versión actual de Node-RED es compatible con Node.js 22?",
        "¿Dónde está el archivo settings.js en una Raspberry Pi?",
        "¿Me ayudas a diagnosticar este error? TypeError: Cannot read properties of undefined",
        "Necesito ayuda con el diagnóstico de un error en mi nodo function",
        "Mi contador de energía envía la corriente actual por Modbus; ¿cómo la paso a amperios?",
        "¿Cómo calculo el flujo de caja mensual con un nodo function?",
        "Si cierro esta pestaña del navegador, ¿se detienen mis flujos?",
        "¿Cómo guardo un contador en el contexto de flujo?",
        "¿Por qué el nodo http request me devuelve un 401?",
        "¿Cómo ejecuto Node-RED en Docker con un volumen persistente para /data?",
        "¿Puedo usar async/await dentro de un nodo function?",
        "¿Cómo instalo node-red-contrib-modbus desde la paleta?",
        "¡Gracias, ya funciona!",
        "Voy a tomarme un café y lo intento de nuevo.",
        "¿Cómo protejo el editor con usuario y contraseña?",
        "¿Qué nodo uso para dejar pasar solo un mensaje por segundo?",
        "Quiero automatizar un flujo de trabajo de aprobaciones con Node-RED",
        "¿Hay que reiniciar Node-RED después de instalar un nodo actualizado desde la paleta?",
    ],
    "pt-BR": [
        "Como divido um array em várias mensagens e depois junto de novo?",
        "Qual a diferença entre msg.payload e msg.topic?",
        "A versão atual do Node-RED é compatível com o Node.js 22?",
        "Onde fica o arquivo settings.js no Raspberry Pi?",
        "Você me ajuda a diagnosticar este erro? TypeError: Cannot read properties of undefined",
        "Preciso de ajuda no diagnóstico de um erro no meu nó function",
        "Meu medidor de energia manda a corrente atual via Modbus; como converto para amperes?",
        "Como calculo o fluxo de caixa mensal num nó function?",
        "Se eu fechar esta aba do navegador, os fluxos param?",
        "Como guardo um contador no contexto de fluxo?",
        "Por que o nó http request retorna 401?",
        "Como rodo o Node-RED no Docker com um volume persistente em /data?",
        "Posso usar async/await dentro de um nó function?",
        "Como instalo o node-red-contrib-modbus pela paleta?",
        "Valeu, funcionou!",
        "Vou tomar um café e tento de novo depois.",
        "Como protejo o editor com usuário e senha?",
        "Qual nó uso para deixar passar só uma mensagem por segundo?",
        "Nós atualizamos o Node-RED ontem e agora o dashboard não abre",
        "Quero automatizar um fluxo de trabalho de aprovação com o Node-RED",
    ],
    "fr": [
        "Comment découper un tableau en plusieurs messages puis les regrouper ?",
        "Quelle est la différence entre msg.payload et msg.topic ?",
        "La version actuelle de Node-RED est-elle compatible avec Node.js 22 ?",
        "Où se trouve le fichier settings.js sur un Raspberry Pi ?",
        "Tu peux m'aider à diagnostiquer cette erreur ? TypeError: Cannot read properties of undefined",
        "J'ai besoin d'aide pour poser un diagnostic sur une erreur dans mon nœud function",
        "Mon compteur d'énergie envoie le courant actuel en Modbus ; comment le convertir en ampères ?",
        "Comment lire un flux RSS toutes les heures ?",
        "Si je ferme cet onglet, est-ce que mes flux continuent de tourner ?",
        "Comment garder un compteur dans le contexte de flux ?",
        "Pourquoi le nœud http request me renvoie une 401 ?",
        "Comment faire tourner Node-RED dans Docker avec un volume persistant pour /data ?",
        "Est-ce que je peux utiliser async/await dans un nœud function ?",
        "Comment installer node-red-contrib-modbus depuis la palette ?",
        "Merci, ça marche !",
        "Je vais prendre un café et je réessaie plus tard.",
        "Comment protéger l'éditeur avec un identifiant et un mot de passe ?",
        "Quel nœud utiliser pour ne laisser passer qu'un message par seconde ?",
        "Le flux de trésorerie de l'entreprise peut-il être suivi avec Node-RED ?",
        "Le diagnostic médical assisté par capteurs, c'est faisable avec Node-RED ?",
    ],
    "de": [
        "Wie teile ich ein Array in einzelne Nachrichten auf und füge sie danach wieder zusammen?",
        "Was ist der Unterschied zwischen msg.payload und msg.topic?",
        "Ist die aktuelle Node-RED-Version mit Node.js 22 kompatibel?",
        "Wo liegt die settings.js auf einem Raspberry Pi?",
        "Kannst du mir helfen, diesen Fehler zu diagnostizieren? TypeError: Cannot read properties of undefined",
        "Ich brauche Hilfe bei der Diagnose eines Fehlers in meinem Function-Node",
        "Mein Energiezähler liefert den aktuellen Strom per Modbus; wie rechne ich das in Ampere um?",
        "Wie berechne ich den monatlichen Cashflow in einem Function-Node?",
        "Wenn ich den aktuellen Tab im Browser schließe, laufen meine Flows dann weiter?",
        "Wie speichere ich einen Zähler im Flow-Kontext?",
        "Warum liefert der http request-Node einen 401 zurück?",
        "Wie betreibe ich Node-RED in Docker mit einem persistenten /data-Volume?",
        "Kann ich in einem Function-Node async/await verwenden?",
        "Wie installiere ich node-red-contrib-modbus über die Palette?",
        "Danke, jetzt klappt's!",
        "Ich hol mir kurz einen Kaffee und probier's dann nochmal.",
        "Wie schütze ich den Editor mit Benutzername und Passwort?",
        "Welchen Node nehme ich, um nur eine Nachricht pro Sekunde durchzulassen?",
        "Ist der aktuelle Node.js-Release schon für Node-RED 4 freigegeben?",
        "Welche Nodes brauche ich für eine Modbus-TCP-Verbindung?",
    ],
    "ru": [
        "Как разбить массив на отдельные сообщения, а потом собрать обратно?",
        "Чем msg.payload отличается от msg.topic?",
        "Текущая версия Node-RED поддерживает Node.js 22?",
        "Где лежит settings.js на Raspberry Pi?",
        "Помоги продиагностировать эту ошибку: TypeError: Cannot read properties of undefined",
        "Помоги с диагностикой ошибки в моём узле function",
        "Счётчик электроэнергии отдаёт текущий ток по Modbus — как перевести его в амперы?",
        "Как посчитать денежный поток за месяц в узле function?",
        "Если закрыть эту вкладку браузера, потоки продолжат работать?",
        "Как хранить счётчик в контексте потока?",
        "Почему узел http request возвращает 401?",
        "Как запустить Node-RED в Docker с постоянным томом для /data?",
        "Можно ли использовать async/await в узле function?",
        "Как установить node-red-contrib-modbus через палитру?",
        "Спасибо, заработало!",
        "Пойду выпью кофе и попробую ещё раз.",
        "Как защитить редактор логином и паролем?",
        "Какой узел использовать, чтобы пропускать не больше одного сообщения в секунду?",
        "Как обработать поток данных с датчика, если он приходит рывками?",
        "Медицинская диагностика оборудования: можно ли собирать данные с аппаратов через Node-RED?",
    ],
}

# languageName in its own script, and a fragment of the answer instruction in that language's own terms.
ANSWER_LANGUAGE = {
    "en-US": ("English", "Answer in English"),
    "zh-CN": ("简体中文", "请用简体中文回答"),
    "zh-TW": ("繁體中文", "請用繁體中文回答"),
    "ja": ("日本語", "日本語で回答"),
    "ko": ("한국어", "한국어로 답변"),
    "es-ES": ("Español", "Responde en español"),
    "pt-BR": ("Português (Brasil)", "Responda em português do Brasil"),
    "fr": ("Français", "Réponds en français"),
    "de": ("Deutsch", "Antworte auf Deutsch"),
    "ru": ("Русский", "Отвечай на русском"),
}


@pytest.fixture(scope="module")
def catalog() -> ScenarioCatalog:
    return ScenarioCatalog(LOCALES)


def test_the_tables_cover_every_shipped_language(catalog):
    assert catalog.languages == sorted(LANGUAGES)
    assert set(FORCED) == set(ORDINARY) == set(ANSWER_LANGUAGE) == set(LANGUAGES)
    for language in LANGUAGES:
        assert set(FORCED[language]) == set(TOOLS), language
        assert all(len(messages) >= 3 for messages in FORCED[language].values()), language
        assert len(ORDINARY[language]) == len(set(ORDINARY[language])) == 20, language


@pytest.mark.parametrize("language,tool,message", [
    pytest.param(language, tool, message, id=f"{language}-{tool}-{index}")
    for language in LANGUAGES for tool in TOOLS for index, message in enumerate(FORCED[language][tool])])
def test_natural_phrasing_forces_the_tool(catalog, language, tool, message):
    match = catalog.get(language).match_keywords(message)
    assert match is not None, f"{language}: nothing matched {message!r}"
    assert match.group.tool == tool, f"{language}: {message!r} matched {match.phrase!r} → {match.group.tool}"
    assert normalize(match.phrase).strip() in normalize(message)


@pytest.mark.parametrize("language,message", [
    pytest.param(language, message, id=f"{language}-{index}")
    for language in LANGUAGES for index, message in enumerate(ORDINARY[language])])
def test_ordinary_sentence_forces_nothing(catalog, language, message):
    match = catalog.get(language).match_keywords(message)
    assert match is None or match.group.tool is None, \
        f"{language}: {message!r} matched {match.phrase!r} → {match.group.tool}"


@pytest.mark.parametrize("language", [language for language in LANGUAGES if language != "en-US"])
def test_quick_starts_force_the_same_tools_as_in_english(catalog, language):
    """The quick starts are translations of each other: clicking one forces the same tool in every language."""
    def forced(lang, key):
        prompts = catalog.get(lang).data.scenarios[key].prompts
        return [(m.group.tool if (m := catalog.get(lang).match_keywords(p)) else None) for p in prompts]
    for key in SCENARIO_KEYS:
        assert forced(language, key) == forced("en-US", key), key


def test_korean_phrases_start_at_a_word_boundary(catalog):
    korean = catalog.get("ko")
    assert korean.match_keywords("이 노드 설명해 줘").group.tool == "get_node_info"
    assert korean.match_keywords("라즈베리 파이 노드 설치 방법") is None  # "파이 노드" is not "이 노드"
    assert korean.match_keywords("자가진단 결과를 대시보드에 띄우려면?") is None


async def chat(client, **body):
    response = await client.post("/ai-sidebar/stream-chat", json=body)
    assert response.status == 200, await response.text()
    events = await read_events(response)
    assert events[-1]["type"] == "done" and not [e for e in events if e["type"] == "error"], events
    return events


@pytest.mark.parametrize("language", LANGUAGES)
async def test_the_model_is_asked_to_answer_in_the_language_of_the_request(client, model, language):
    name, instruction = ANSWER_LANGUAGE[language]
    question = ORDINARY[language][1]
    await chat(client, message=question, language=language)

    messages = model.requests[-1]["messages"]
    assert messages[0]["role"] == "system"
    system = messages[0]["content"]
    assert instruction in system and name in system
    if language != "en-US":
        assert "Answer in English" not in system
    assert messages[-1] == {"role": "user", "content": question}


@pytest.mark.parametrize("language", LANGUAGES)
async def test_a_forced_tool_answer_carries_the_language_instruction_too(client, nodered, model, language):
    tab = nodered.tabs()[0]
    question = FORCED[language]["get_flow"][0]
    events = await chat(client, message=question, language=language, selectedFlow={"id": tab["id"]})
    assert events[0]["type"] == "tool_call" and events[0]["tool"] == "get_flow"

    messages = model.requests[-1]["messages"]
    instruction = ANSWER_LANGUAGE[language][1]
    assert instruction in messages[0]["content"]
    assert question in messages[-1]["content"] and instruction in messages[-1]["content"]


@pytest.mark.parametrize("language", LANGUAGES)
async def test_scenarios_route_serves_every_shipped_language(client, catalog, language):
    response = await client.get("/ai-sidebar/scenarios", params={"lang": language})
    assert response.status == 200
    body = await response.json()
    assert body["language"] == language and body["languageName"] == ANSWER_LANGUAGE[language][0]
    assert set(body["scenarios"]) == set(SCENARIO_KEYS)
    shipped = load_language(LOCALES / language / "scenarios.json", BASE)
    for key, scenario in body["scenarios"].items():
        assert "systemPrompt" not in scenario
        assert scenario["name"] == shipped.scenarios[key].name
        assert scenario["description"] == shipped.scenarios[key].description and scenario["prompts"]
    keywords = [k for s in body["scenarios"].values() for group in s["keywords"] for k in group["key"]]
    # the keywords the editor hints with are the ones that force the tools in the table above
    for tool in TOOLS:
        match = catalog.get(language).match_keywords(FORCED[language][tool][0])
        assert match.phrase in keywords


@pytest.mark.parametrize("requested,expected", [
    ("pt", "pt-BR"), ("pt-PT", "pt-BR"), ("zh-HK", "zh-TW"), ("zh-Hant-HK", "zh-TW"), ("zh-SG", "zh-CN"),
    ("de-AT", "de"), ("de-CH", "de"), ("fr-CA", "fr"), ("fr-BE", "fr"), ("es-AR", "es-ES"), ("es-419", "es-ES"),
    ("ja-JP", "ja"), ("ko-KR", "ko"), ("ru-RU", "ru"), ("en-GB", "en-US"), ("JA", "ja"),
])
async def test_scenarios_route_maps_region_variants_to_the_shipped_language(client, requested, expected):
    response = await client.get("/ai-sidebar/scenarios", params={"lang": requested})
    assert response.status == 200
    body = await response.json()
    assert body["language"] == expected and body["languageName"] == ANSWER_LANGUAGE[expected][0]


@pytest.mark.parametrize("language,scenario", [(language, key) for language in LANGUAGES for key in SCENARIO_KEYS])
async def test_every_system_prompt_placeholder_is_filled_with_readable_text(client, nodered, model, language,
                                                                             scenario):
    tab = next(t for t in nodered.tabs() if t.get("label"))
    nodes = nodered.nodes_of(tab["id"])[:2]
    selected = [{"id": nodes[0]["id"], "type": nodes[0]["type"], "name": "Temperatur → Dashboard"},
                {"id": nodes[1]["id"], "type": nodes[1]["type"]}]  # no name: must not read "None"
    await chat(client, message=ORDINARY[language][1], language=language, scenario=scenario,
               selectedFlow={"id": tab["id"], "label": tab["label"]}, selectedNodes=selected)

    system = model.requests[-1]["messages"][0]["content"]
    assert "{{" not in system and not PLACEHOLDER.search(system)
    assert "[object Object]" not in system and not re.search(r"\bNone\b", system)
    assert "undefined" not in system
    template = load_language(LOCALES / language / "scenarios.json", BASE).scenarios[scenario].systemPrompt
    used = set(PLACEHOLDER.findall(template))
    if scenario == "general":
        assert used == {"nodeRedVersion", "selectedFlow", "selectedNodes", "language"}
    if "selectedFlow" in used:
        assert tab["label"] in system and tab["id"] in system
    if "selectedNodes" in used:
        assert "Temperatur → Dashboard" in system
        assert all(node["id"] in system and node["type"] in system for node in nodes)
    if "nodeRedVersion" in used:
        assert NODERED_VERSION in system
    if "language" in used:
        assert ANSWER_LANGUAGE[language][0] in system


@pytest.mark.parametrize("language", LANGUAGES)
async def test_with_nothing_selected_and_no_version_the_system_prompt_says_so_in_its_own_language(
        aiohttp_client, settings, model, language):
    unreachable = settings.model_copy(update={"nodered": NodeRedSettings(url=f"http://127.0.0.1:{free_port()}")})
    client = await aiohttp_client(create_app(unreachable))
    await chat(client, message=ORDINARY[language][1], language=language, scenario="general")

    system = model.requests[-1]["messages"][0]["content"]
    words = ScenarioCatalog(LOCALES).get(language).data.placeholderWords
    assert system.count(words["none"]) >= 2 and f"Node-RED {words['unknown']}" in system
    if language != "en-US":
        assert not re.search(r"\b(none|unknown)\b", system), system


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_long_selection_is_listed_and_shortened_in_the_prompts_language(language):
    words = ScenarioCatalog(LOCALES).get(language).data.placeholderWords
    nodes = [SelectedNode(id=f"n{i}", type="debug") for i in range(23)]
    listed = describe_nodes(nodes, words)
    assert listed.startswith(f"debug ({words['id']} n0){words['separator']}debug ({words['id']} n1)")
    assert "n19" in listed and "n20" not in listed and "3" in listed.split("n19)")[1]
    assert listed == words["more"].format(list=describe_nodes(nodes[:20], words), count=3)
    assert describe_flow("t1", "Main", words) == f'"Main" ({words["id"]} t1)'
    assert describe_flow(None, None, words) == words["none"]


@pytest.mark.parametrize("language,message", [
    ("es-ES", "¿Por qué el nodo http request da error?"),
    ("pt-BR", "Por que o nó mqtt in dá erro?"),
    ("fr", "Pourquoi mon flux de capteurs échoue ?"),
    ("de", "Warum wirft der Function Node einen Fehler?"),
    ("en-US", "Why does the http request node fail?"),
    ("ru", "Почему узел http request не работает?"),
])
def test_a_keyword_phrase_matches_with_words_in_between_in_natural_word_order(catalog, language, message):
    """Issue 30: "¿Por qué el nodo X da error?" against "por qué … da error": the parts of a phrase written with
    "…" match in order with a few words between them."""
    match = catalog.get(language).match_keywords(message)
    why_fail = catalog.get(language).match_keywords("why does this fail") or catalog.get("en-US").match_keywords(
        "why does this fail")
    assert match is not None and match.group.tool == why_fail.group.tool, (language, message, match)
    assert "…" in match.phrase


def test_a_gapped_phrase_does_not_reach_across_sentences(catalog):
    message = ("Why is the sky blue on a sunny day in the summer when it is warm? Tell me, then what does a "
               "function node do and does it ever fail?")
    match = catalog.get("en-US").match_keywords(message)
    assert match is None or match.group.tool is None
