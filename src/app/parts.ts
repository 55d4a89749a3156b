import type { BrokerStage } from "./build-broker.js";
import type { Core } from "./build-core.js";
import type { HttpStage } from "./build-http.js";
import type { StartJob } from "./build-jobs.js";
import type { LoginStage } from "./build-login.js";
import type { TopologyParts } from "./build-topology.js";
import type { WorkspaceStage } from "./build-workspace.js";

/** What the builders have built so far, by builder; each later builder takes the parts it needs. */
export interface Parts {
  readonly core: Core;
  readonly topology: TopologyParts;
  /** Starts a periodic job on the app's clock (leader-only ones under the topology's leadership). */
  readonly job: StartJob;
  readonly workspace: WorkspaceStage;
  readonly broker: BrokerStage;
  readonly http: HttpStage;
  readonly login: LoginStage;
}
