import { RunnerAddress } from "@effect/cluster/RunnerAddress"
import * as ShardingConfig from "@effect/cluster/ShardingConfig"
import { Effect, Layer, Option } from "effect"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"

/**
 * The cluster's settings from SWITCHYARD_* variables only. `ShardingConfig.layerFromEnv` would also read
 * generic names such as HOST and PORT, which belong to other programs in a container.
 */
export const ShardingSettings = {
  layer: Layer.effect(
    ShardingConfig.ShardingConfig,
    Effect.map(SwitchyardConfig, (config) => {
      const runnerAddress = RunnerAddress.make({ host: config.runner.host, port: config.runner.port })
      return {
        ...ShardingConfig.defaults,
        ...config.sharding,
        runnerAddress: Option.some(runnerAddress),
        runnerListenAddress: Option.map(
          config.runner.listenHost,
          (host) => RunnerAddress.make({ host, port: config.runner.port })
        ),
        // node-to-node messages really cross a socket between nodes; skip the in-process re-encode
        simulateRemoteSerialization: false
      }
    })
  )
}
