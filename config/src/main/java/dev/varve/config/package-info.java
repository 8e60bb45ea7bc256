/**
 * The store's configuration: {@link dev.varve.config.VarveConfig} and its builder (every property with its
 * {@code varve.} name and default side by side, validated field against field at {@code build()}), loading from
 * properties ({@link dev.varve.config.ConfigProperties}), the snapshot {@link dev.varve.config.Retention} policy, and
 * the mode enums: {@link dev.varve.config.WalSyncMode}, {@link dev.varve.config.RecoveryMode},
 * {@link dev.varve.config.RecoveryCompression}, {@link dev.varve.config.RankTreePolicy}. Immutable values only: no
 * locks, no threads, no files; every other module depends on this one.
 */
package dev.varve.config;
