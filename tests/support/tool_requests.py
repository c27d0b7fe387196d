"""Requests that need tools (issue 30, fault 0): a change to the flows, or what the running flow did, phrased as
users write them in the ten shipped languages. Each must reach a model call that offers tools (the agent, after a
forced tool or retrieved help where those came first), never a tool-less answer.

Used by ``tests/test_router_graph.py`` and ``make bench``'s router phase (``tests/bench/router.py``).
"""

from __future__ import annotations

from tests.support.router_paths import Labelled

# ``select``: what the editor has open (``flow``: a tab, ``node``: a function node on it), as in router_paths.
NEEDS_TOOLS: list[Labelled] = [
    # Changes, in the phrasings that went to a help search (issues 26, 30, 31).
    Labelled("en-US", "add a debug node for the alarms", "tools"),
    Labelled("en-US", "Add a debug node for the alarms in my flow", "tools", select="flow"),
    Labelled("en-US", "add a debug node to the alarms output", "tools", select="flow"),
    Labelled("en-US", "Please add a debug node so I can see the alarms", "tools"),
    Labelled("en-US", "Can you add a delay node between the inject and the function?", "tools", select="flow"),
    Labelled("en-US", "Connect the inject node to the debug node in the current flow", "tools", select="flow"),
    Labelled("en-US", "Rename this function node to 'Scale reading'", "tools", select="node"),
    Labelled("en-US", "Delete the unused debug nodes on this tab", "tools", select="flow"),
    Labelled("en-US", "Create a new tab for the alarms", "tools"),
    Labelled("en-US", "fix the function node, it adds strings instead of numbers", "tools", select="node"),
    Labelled("en-US", "Disable the debug nodes in this flow", "tools", select="flow"),
    # Runtime facts and reading named things.
    Labelled("en-US", "What did the debug node 'alarm out' show last?", "tools"),
    Labelled("en-US", "Read the flow 'Greenhouse' and then the node 'Scale reading'", "tools"),
    Labelled("en-US", "show me the last debug messages of this flow", "tools", select="flow"),
    Labelled("en-US", "What is the status of the MQTT nodes?", "tools"),
    Labelled("de", "Füge einen Debug-Node für die Alarme hinzu", "tools"),
    Labelled("de", "Bitte lösche die Debug-Nodes im aktuellen Flow", "tools", select="flow"),
    Labelled("de", "Verbinde den Inject-Node mit dem Function-Node", "tools", select="flow"),
    Labelled("de", "Was hat der Debug-Node zuletzt angezeigt?", "tools"),
    Labelled("fr", "Ajoute un nœud debug pour les alarmes", "tools"),
    Labelled("fr", "Renomme ce nœud function en « Mise à l'échelle »", "tools", select="node"),
    Labelled("fr", "Qu'a affiché le nœud debug en dernier ?", "tools"),
    Labelled("fr", "Supprime les nœuds debug inutilisés du flux actuel", "tools", select="flow"),
    Labelled("es-ES", "Añade un nodo debug para las alarmas", "tools"),
    Labelled("es-ES", "Conecta el nodo inject con el nodo function", "tools", select="flow"),
    Labelled("es-ES", "¿Qué mostró el nodo debug por última vez?", "tools"),
    Labelled("es-ES", "Elimina los nodos debug de este flujo", "tools", select="flow"),
    Labelled("pt-BR", "Adicione um nó debug para os alarmes", "tools"),
    Labelled("pt-BR", "Renomeie este nó function para 'Escala'", "tools", select="node"),
    Labelled("pt-BR", "O que o nó debug mostrou por último?", "tools"),
    Labelled("ru", "Добавь узел debug для тревог", "tools"),
    Labelled("ru", "Удали лишние узлы debug в текущем потоке", "tools", select="flow"),
    Labelled("ru", "Что показал узел debug последним?", "tools"),
    Labelled("ja", "アラーム用にデバッグノードを追加して", "tools"),
    Labelled("ja", "現在のフローのデバッグノードを削除してください", "tools", select="flow"),
    Labelled("ja", "デバッグノードは最後に何を表示しましたか？", "tools"),
    Labelled("zh-CN", "给报警添加一个debug节点", "tools"),
    Labelled("zh-CN", "把当前流程里的debug节点删除", "tools", select="flow"),
    Labelled("zh-CN", "debug节点最后显示了什么？", "tools"),
    Labelled("zh-TW", "幫警報新增一個debug節點", "tools"),
    Labelled("zh-TW", "把這個function節點重新命名為「縮放」", "tools", select="node"),
    Labelled("zh-TW", "debug節點最後顯示了什麼？", "tools"),
    Labelled("ko", "알람용 debug 노드를 추가해 주세요", "tools"),
    Labelled("ko", "현재 플로우의 debug 노드를 삭제해 줘", "tools", select="flow"),
    Labelled("ko", "debug 노드가 마지막으로 무엇을 표시했나요?", "tools"),
]
