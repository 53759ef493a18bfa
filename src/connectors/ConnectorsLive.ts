import { Layer } from "effect"
import { BuiltinConnectorsLive } from "./BuiltinConnectors.js"
import { ConnectionCredentials } from "./ConnectionCredentials.js"
import { ConnectionEntityLive } from "./ConnectionEntityLive.js"
import { Connections } from "./Connections.js"
import { ConnectorCatalog } from "./ConnectorCatalog.js"
import { ConnectorRepo } from "./ConnectorRepo.js"
import { CredentialVault } from "./CredentialVault.js"
import { Egress } from "./Egress.js"
import { InvocationRecorder } from "./InvocationRecorder.js"
import { OAuthAuthorizations } from "./OAuthAuthorizations.js"
import { OAuthClient } from "./OAuthClient.js"
import { OperationInvoker } from "./OperationInvoker.js"
import { OwnApi } from "./OwnApi.js"

const Foundation = Layer.mergeAll(
  ConnectorRepo.Default,
  CredentialVault.Default,
  Egress.Default,
  InvocationRecorder.Default,
  OwnApi.Default
)

/** The connectors area: catalog, connections, invoker, the Connection entity and the built-ins. */
export const ConnectorsLive = Layer.mergeAll(Connections.Default, ConnectionEntityLive, BuiltinConnectorsLive).pipe(
  Layer.provideMerge(Layer.mergeAll(OAuthAuthorizations.Default, OperationInvoker.Default, ConnectorCatalog.Default)),
  Layer.provideMerge(Layer.mergeAll(ConnectionCredentials.Default, OAuthClient.Default)),
  Layer.provideMerge(Foundation)
)
