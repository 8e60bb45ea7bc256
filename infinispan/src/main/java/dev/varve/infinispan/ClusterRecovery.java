package dev.varve.infinispan;

import org.infinispan.AdvancedCache;
import org.infinispan.conflict.ConflictManager;
import org.infinispan.conflict.ConflictManagerFactory;
import org.infinispan.conflict.EntryMergePolicy;
import org.infinispan.conflict.MergePolicy;
import org.infinispan.manager.EmbeddedCacheManager;
import org.infinispan.remoting.transport.Address;
import org.infinispan.util.function.SerializableFunction;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Brings every key a cluster's stores hold back to all its owners after a restart that had no topology to restore
 * (every node killed, or the cluster formed in pieces that later merged): Infinispan builds a new consistent hash
 * then, in which a key's new owners may not include the nodes whose stores hold it, and its reads ask one owner.
 *
 * <p>Infinispan's conflict resolution compares the copies of each segment on its owners and writes the merged entry
 * to all of them, but it reads the copies of the node that runs it from that node's memory only, not from its
 * store: a key whose one surviving copy is in the resolving node's store looks absent everywhere and is left as it
 * is. {@link #resolveOnEveryNode} therefore runs the resolution on each node in turn (a node's blind spot is seen by
 * every other node's run, which reads it over the network, from the store), with {@code PREFERRED_NON_NULL}: a
 * key held by one owner is copied to the others, and where copies differ the primary owner's wins. It then asks
 * each node how many conflicts it still sees and repeats until a round ends with none anywhere, because a merge
 * write can fail without failing the resolution (Infinispan logs it: {@code ISPN000466}, for example when its
 * executors push back under load).
 *
 * <p>Run it once the cluster is stable (no rebalance in progress) and before the application writes again: a key
 * written meanwhile is resolved like any other, and a key removed from one owner while another still held it would
 * come back. Every node needs {@link CacheHistory#serializationContext()} in its global serialization
 * configuration (it teaches Infinispan all of Varve's cluster tasks).
 */
public final class ClusterRecovery {
    private static final long TIMEOUT_SECONDS = 600;
    /** Rounds before giving up: each round fixes every key it sees, so a second is needed only after failed writes. */
    static final int MAX_ROUNDS = 5;

    private ClusterRecovery() {
    }

    /**
     * What {@link #resolveOnEveryNode} did: for each round, each node's count of conflicts it still saw after its own
     * resolution (in the order the nodes ran). The last round has none.
     */
    public record Report(List<Map<Address, Long>> conflictsLeftByRound) {
        public Report {
            conflictsLeftByRound = List.copyOf(conflictsLeftByRound);
        }

        /** How many rounds it took (at least 1). */
        public int rounds() {
            return conflictsLeftByRound.size();
        }
    }

    /**
     * Resolves the conflicts of cache {@code cacheName} on every member of the cluster, one node after the other,
     * until a round ends with no node seeing a conflict.
     *
     * @throws IllegalArgumentException if the manager or the cache is missing, or the manager is not clustered
     * @throws IllegalStateException naming the node where a resolution failed (for example, a rebalance is in
     *         progress), or with each round's counts if conflicts remain after {@value #MAX_ROUNDS} rounds
     */
    public static Report resolveOnEveryNode(EmbeddedCacheManager manager, String cacheName) {
        if (manager == null) throw new IllegalArgumentException("cache manager is null");
        if (cacheName == null || manager.getCacheConfiguration(cacheName) == null) throw new IllegalArgumentException("no cache named " + cacheName);
        if (manager.getMembers() == null) throw new IllegalArgumentException("cache manager " + manager + " is not clustered: there is nothing to resolve");
        List<Map<Address, Long>> rounds = new ArrayList<>();
        while (rounds.size() < MAX_ROUNDS) {
            Map<Address, Long> left = new LinkedHashMap<>();
            for (Address node : manager.getMembers()) left.put(node, resolveOn(manager, node, new Resolve(cacheName)));
            rounds.add(left);
            if (left.values().stream().allMatch(n -> n == 0)) return new Report(rounds);
        }
        throw new IllegalStateException("cache " + cacheName + " still has conflicts after " + MAX_ROUNDS + " rounds of resolution on every node; "
                + "conflicts each node saw after its run, round by round: " + rounds);
    }

    /** Runs {@code task} on {@code node} alone and returns its answer. */
    private static long resolveOn(EmbeddedCacheManager manager, Address node, Resolve task) {
        AtomicLong answer = new AtomicLong(-1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        manager.executor().filterTargets(Set.of(node)).timeout(TIMEOUT_SECONDS, TimeUnit.SECONDS)
                .submitConsumer(task, (address, result, error) -> {
                    if (error != null) failure.set(error);
                    else answer.set(result);
                }).join();
        if (failure.get() != null) throw new IllegalStateException("conflict resolution of cache " + task.cacheName() + " failed on " + node, failure.get());
        if (answer.get() < 0) throw new IllegalStateException("conflict resolution of cache " + task.cacheName() + " got no answer from " + node + " (did it leave?)");
        return answer.get();
    }

    /** On one node: resolve the cache's conflicts with PREFERRED_NON_NULL, then count the conflicts this node still sees. */
    record Resolve(String cacheName) implements SerializableFunction<EmbeddedCacheManager, Long> {
        @Override
        @SuppressWarnings("unchecked") // MergePolicy's constants are raw EntryMergePolicy instances
        public Long apply(EmbeddedCacheManager manager) {
            AdvancedCache<Object, Object> cache = manager.getCache(cacheName).getAdvancedCache();
            ConflictManager<Object, Object> conflicts = ConflictManagerFactory.get(cache);
            conflicts.resolveConflicts((EntryMergePolicy<Object, Object>) MergePolicy.PREFERRED_NON_NULL);
            try (var left = conflicts.getConflicts()) {
                return left.count();
            }
        }
    }
}
