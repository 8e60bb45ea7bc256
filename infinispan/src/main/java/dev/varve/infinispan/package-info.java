/**
 * Varve as an Infinispan persistence store: {@link dev.varve.infinispan.VarveStore} is a {@code NonBlockingStore}
 * keeping each cache in its own Varve store, one caller-placed partition per segment; its configuration is built
 * programmatically or parsed from XML; {@link dev.varve.infinispan.CacheHistory} exposes Varve snapshots as labelled
 * past states of a cache. Uses only the engine's public API; blocking calls run on Infinispan's
 * {@code BlockingManager}, and no lock of this package is held across a call into Varve.
 */
package dev.varve.infinispan;
