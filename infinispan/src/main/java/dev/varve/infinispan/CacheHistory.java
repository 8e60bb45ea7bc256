package dev.varve.infinispan;

import org.infinispan.Cache;
import org.infinispan.commons.util.IntSet;
import org.infinispan.commons.util.IntSets;
import org.infinispan.configuration.cache.PersistenceConfiguration;
import org.infinispan.configuration.cache.StoreConfiguration;
import org.infinispan.factories.ComponentRegistry;
import org.infinispan.manager.EmbeddedCacheManager;
import org.infinispan.marshall.persistence.PersistenceMarshaller;
import org.infinispan.protostream.SerializationContextInitializer;
import org.infinispan.remoting.transport.Address;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * History for a cache across a cluster: {@link #declare} takes a Varve snapshot of the cache's store on every node
 * at once (through Infinispan's cluster executor) under one cluster-wide label, and {@link #readAsOf} reads the
 * cache's entries as of that label, each segment answered by the node that was its primary owner when the label was
 * declared, the answers merged.
 *
 * <h2>The cut</h2>
 * Each node's snapshot is an exact cut of that node's own store (Varve's I9: every store write that completed
 * before the node declared is in it, none that started after). The nodes declare at nearly the same moment, not
 * in one global transaction, so across the cluster the label promises:
 * <ul>
 *   <li>every write acknowledged to its caller before {@code declare} was called is in the label (with a
 *       synchronous, write-through store a put returns only after both owners stored it);</li>
 *   <li>no write that started after {@code declare} returned is in it;</li>
 *   <li>a write running concurrently with the declaration is in it or not, per key: each segment is read from one
 *       node's cut, so a key reads either its value before or after such a write, never a torn one, but two keys
 *       in different segments may reflect slightly different moments (a multi-key write may show partly).</li>
 * </ul>
 * Every node needs {@link #serializationContext()} in its global serialization configuration.
 *
 * <p>A segment whose primary owner is unknown as of the label (the topology was changing, or that node has since lost
 * its store) makes {@link #readAsOf} fail rather than return an incomplete state.
 */
public final class CacheHistory {
    private static final long TIMEOUT_SECONDS = 120;

    private CacheHistory() {
    }

    /**
     * The serialization context of the tasks {@link #declare}, {@link #readAsOf} and
     * {@link ClusterRecovery#resolveAll} send to the nodes. Add it to every node's global configuration:
     * {@code global.serialization().addContextInitializer(CacheHistory.serializationContext())}.
     */
    public static SerializationContextInitializer serializationContext() {
        return new ClusterTaskSerialization();
    }

    /**
     * Declares a snapshot labelled {@code label} on every node's {@link VarveStore} of cache {@code cacheName}.
     * Returns each node's Varve snapshot id (a cache manager that is not clustered answers under the address null).
     *
     * @throws IllegalArgumentException if the manager, cache or label is missing, or the cache passivates or writes
     *         its Varve store behind
     * @throws IllegalStateException naming the nodes that already hold the label (then no node declares it), or
     *         each node where the declaration failed
     */
    public static Map<Address, Long> declare(EmbeddedCacheManager manager, String cacheName, String label) {
        checkArguments(manager, cacheName, label);
        requireWriteThrough(manager, cacheName);
        refuseIfUsed(manager, cacheName, label);
        return ClusterTasks.run(manager, null, TIMEOUT_SECONDS, new HistoryTasks.Declare(cacheName, label), "declaring snapshot '" + label + "'");
    }

    /**
     * A label promises every write acknowledged before {@code declare}, which only a store written synchronously on
     * every write holds: a passivating cache's store has only what was evicted from memory (a label of 100 entries
     * read 90), and a write-behind store gets a write after the caller was told it is done.
     */
    private static void requireWriteThrough(EmbeddedCacheManager manager, String cacheName) {
        PersistenceConfiguration persistence = manager.getCacheConfiguration(cacheName).persistence();
        if (persistence.passivation()) throw new IllegalArgumentException("cache " + cacheName + " uses passivation: its store holds only the "
                + "entries evicted from memory, so a snapshot of it is not the cache's state; history needs a write-through store");
        for (StoreConfiguration store : persistence.stores()) {
            if (store instanceof VarveStoreConfiguration && store.async().enabled()) throw new IllegalArgumentException("cache " + cacheName
                    + " has a write-behind Varve store: a write is acknowledged before the store has it, so a label could miss it; "
                    + "history needs a synchronous write-through store");
        }
    }

    /**
     * Refuses a label that any node already holds, before any node declares it. Each node alone would refuse it too,
     * but a node without it (one that joined since) would go ahead and record the segments it is primary owner of now,
     * next to what the others recorded then: the label would then have two primary owners of some segments, and
     * {@link #readAsOf} of it would fail for good.
     */
    private static void refuseIfUsed(EmbeddedCacheManager manager, String cacheName, String label) {
        Map<Address, Boolean> known = ClusterTasks.run(manager, null, TIMEOUT_SECONDS, new HistoryTasks.Known(cacheName, label),
                "looking up snapshot label '" + label + "'");
        List<Address> holders = known.entrySet().stream().filter(Map.Entry::getValue).map(Map.Entry::getKey).toList();
        if (!holders.isEmpty()) throw new IllegalStateException("snapshot label '" + label + "' of cache " + cacheName + " is already used on "
                + holders + " (a label is declared once; choose another)");
    }

    /**
     * The entries of cache {@code cacheName} as of {@code label} (entries whose lifespan has run out by now are
     * left out, as in a live read).
     *
     * @throws IllegalArgumentException if no node knows the label
     * @throws IllegalStateException if some segment has no node that was its primary owner as of the label
     */
    public static <K, V> Map<K, V> readAsOf(EmbeddedCacheManager manager, String cacheName, String label) {
        checkArguments(manager, cacheName, label);
        Map<Address, byte[]> answers = ClusterTasks.run(manager, null, TIMEOUT_SECONDS, new HistoryTasks.ReadAsOf(cacheName, label), "reading as of '" + label + "'");
        Cache<K, V> cache = manager.getCache(cacheName);
        int segments = cache.getCacheConfiguration().clustering().hash().numSegments();
        PersistenceMarshaller marshaller = ComponentRegistry.of(cache).getPersistenceMarshaller();
        IntSet answered = IntSets.mutableEmptySet(segments);
        Map<K, V> out = new HashMap<>();
        for (byte[] answer : answers.values()) {
            HistoryTasks.Answer a = HistoryTasks.Answer.decode(answer);
            for (int s : a.segments()) {
                if (!answered.add(s)) throw new IllegalStateException("segment " + s + " had two primary owners as of '" + label + "'");
            }
            a.putEntries(out, marshaller, cache.getAdvancedCache());
        }
        if (answered.isEmpty()) throw new IllegalArgumentException("no node knows a snapshot labelled '" + label + "' of cache " + cacheName);
        if (answered.size() != segments) {
            IntSet missing = IntSets.mutableCopyFrom(IntSets.immutableRangeSet(segments));
            missing.removeAll(answered);
            throw new IllegalStateException("no node was the primary owner of segments " + missing + " as of '" + label
                    + "' (the topology was changing, or that node lost its store)");
        }
        return out;
    }

    private static void checkArguments(EmbeddedCacheManager manager, String cacheName, String label) {
        if (manager == null) throw new IllegalArgumentException("cache manager is null");
        if (cacheName == null || manager.getCacheConfiguration(cacheName) == null) throw new IllegalArgumentException("no cache named " + cacheName);
        if (label == null || label.isEmpty()) throw new IllegalArgumentException("snapshot label is null or empty");
    }
}
