import { Layer } from "effect"
import { ConnectorsLive } from "../connectors/ConnectorsLive.js"
import { Workspace } from "../files/Workspace.js"
import { FunctionTools } from "../functions/FunctionTools.js"
import { KnowledgeTools } from "../knowledge/KnowledgeTools.js"
import { Approvals } from "../skills/Approvals.js"
import { Skills } from "../skills/Skills.js"
import { LocalTasks } from "../tasks/LocalTasks.js"
import { TaskCompletions } from "../tasks/TaskCompletions.js"
import { TaskEntityLive } from "../tasks/TaskEntityLive.js"
import { TaskPlacement } from "../tasks/TaskPlacement.js"
import { TaskRecoveryLive } from "../tasks/TaskRecovery.js"
import { TaskRepo } from "../tasks/TaskRepo.js"
import { TaskRunner } from "../tasks/TaskRunner.js"
import { TaskRuns } from "../tasks/TaskRuns.js"
import { Tasks } from "../tasks/Tasks.js"
import { AgentEntityLive } from "./AgentEntityLive.js"
import { AgentRepo } from "./AgentRepo.js"
import { Agents } from "./Agents.js"
import { BudgetLeases } from "./BudgetLeases.js"
import { BuiltinTools } from "./BuiltinTools.js"
import { ModelGateway } from "./ModelGateway.js"
import { ModelProviders } from "./ModelProviders.js"

/** Agents and tasks: services, the Task and Agent entities, model access. */
export const AgentsLive = Layer.mergeAll(Tasks.Default, TaskEntityLive, TaskRecoveryLive, AgentEntityLive).pipe(
  Layer.provideMerge(TaskRuns.Default),
  Layer.provideMerge(TaskRunner.Default),
  Layer.provideMerge(Layer.mergeAll(LocalTasks.Default, TaskPlacement.Default, Skills.Default, Approvals.Default)),
  Layer.provideMerge(Layer.mergeAll(
    Agents.Default,
    ModelGateway.Default,
    TaskRepo.Default,
    TaskCompletions.Default
  )),
  Layer.provideMerge(Layer.mergeAll(ModelProviders.Default, AgentRepo.Default, BudgetLeases.Default)),
  Layer.provideMerge(BuiltinTools.Default),
  Layer.provideMerge(Layer.mergeAll(Workspace.Default, KnowledgeTools.Default, FunctionTools.Default)),
  Layer.provideMerge(ConnectorsLive)
)
