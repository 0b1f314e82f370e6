"""The names checkout's tasks are queued by (`core.task_queue`): the features' rules never import
`checkout.tasks`, which imports them, so the modules form no loop. A task keeps its name when
its code moves: the running release queues by it."""

from __future__ import annotations

MAIL_SEND_TASK = "checkout.tasks.order_mail_send_task"
RELEASE_DUPLICATES_TASK = "checkout.tasks.order_release_duplicates_task"
ORDERS_LIST_MAIL_TASK = "checkout.tasks.orders_list_mail_task"
ORDER_SYNC_TASK = "checkout.tasks.order_sync_task"
