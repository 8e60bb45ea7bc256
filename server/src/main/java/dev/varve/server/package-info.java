/**
 * Varve on the network: {@link dev.varve.server.VarveServer} serves, on one loopback port by default, the
 * snapshot-shipping protocol (backups and standbys that follow a store) and HTTP (Prometheus metrics, a JSON API,
 * the dashboard), told apart by a connection's first bytes. Built on the engine's public API: it takes no store lock
 * itself, only the locks the API takes for it. One of its locks sits inside the store's write path: a follower's
 * {@code ChangeQueue} is a change listener, so its monitor is taken under the store's checkpoint and partition locks
 * (innermost in the global order, see {@code dev.varve.engine}) and is never held while calling the store.
 */
package dev.varve.server;
