package dev.varve.infinispan;

import org.infinispan.AdvancedCache;
import org.infinispan.conflict.ConflictManagerFactory;
import org.infinispan.container.entries.CacheEntry;
import org.infinispan.container.entries.NullCacheEntry;
import org.infinispan.context.Flag;
import org.infinispan.distribution.DistributionInfo;
import org.infinispan.distribution.LocalizedCacheTopology;
import org.infinispan.factories.ComponentRegistry;
import org.infinispan.manager.EmbeddedCacheManager;
import org.infinispan.metadata.EmbeddedMetadata;
import org.infinispan.metadata.Metadata;
import org.infinispan.persistence.manager.PersistenceManager;
import org.infinispan.persistence.spi.MarshallableEntry;
import org.infinispan.persistence.spi.NonBlockingStore;
import org.infinispan.remoting.transport.Address;
import org.infinispan.util.function.SerializableFunction;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.stream.Stream;

/**
 * Brings every key a cluster's stores hold back to all its owners after a restart that had no topology to restore
 * (every node killed, or the cluster formed in pieces that later merged): Infinispan builds a new consistent hash
 * then, in which a key's new owners may not include the nodes whose stores hold it, and its reads ask one owner.
 *
 * <p>It is Infinispan's conflict resolution with {@code PREFERRED_NON_NULL} (a key held by one owner is copied to the
 * others; where copies differ the primary owner's wins), run so that it finds every copy and cannot fail quietly:
 * <ul>
 *   <li>Infinispan reads the copies of the node that looks for conflicts from that node's memory only, not from its
 *       store (other nodes' copies it reads from their stores), so a key whose one surviving copy is in that node's
 *       store looks absent everywhere, and a key whose copy there is not in memory looks like a conflict. So a key
 *       reported missing on the node itself is looked up in its store first.</li>
 *   <li>Each node writes in batches, one at a time, and a failed write fails the call. Infinispan's
 *       {@code resolveConflicts} fires a write per conflict all at once and only logs those that fail
 *       ({@code ISPN000466}); after a full crash there are thousands, and under load they time out or are refused.</li>
 *   <li>It runs on one node after the other until a run finds no conflict: the first run resolves everything it
 *       sees, which is every copy on every owner, and the next one confirms it from another node.</li>
 * </ul>
 *
 * <p>Run it once the cluster is stable (no rebalance in progress) and before the application writes again: a key
 * written meanwhile is resolved like any other, and a key removed from one owner while another still held it would
 * come back. Every node needs {@link CacheHistory#serializationContext()} in its global serialization
 * configuration (it teaches Infinispan all of Varve's cluster tasks).
 */
public final class ClusterRecovery {
    private static final long TIMEOUT_SECONDS = 600;
    /**
     * Rounds before giving up: the first run fixes every conflict and the second finds none; more are needed only if
     * the application wrote meanwhile.
     */
    static final int MAX_ROUNDS = 5;

    private ClusterRecovery() {
    }

    /**
     * What {@link #resolveAll} did: for each round, how many conflicts each node found and resolved, in the
     * order the nodes ran. It stops at the first run that found none, which usually cuts the first round short.
     */
    public record Report(List<Map<Address, Long>> resolvedByRound) {
        public Report {
            resolvedByRound = resolvedByRound.stream().map(r -> Collections.unmodifiableMap(new LinkedHashMap<>(r))).toList();
        }

        /** How many rounds it took (at least 1). */
        public int rounds() {
            return resolvedByRound.size();
        }

        /** How many conflicts were resolved in all. */
        public long resolved() {
            return resolvedByRound.stream().flatMap(r -> r.values().stream()).mapToLong(Long::longValue).sum();
        }
    }

    /**
     * Resolves the conflicts of cache {@code cacheName} on the members of the cluster, one node after the other,
     * until a run finds no conflict.
     *
     * @throws IllegalArgumentException if the manager or the cache is missing, or the manager is not clustered
     * @throws IllegalStateException naming the node where a resolution failed (for example, a rebalance is in
     *         progress, or a write timed out), or with each round's counts if rounds still find conflicts after
     *         {@value #MAX_ROUNDS} rounds
     */
    public static Report resolveAll(EmbeddedCacheManager manager, String cacheName) {
        if (manager == null) throw new IllegalArgumentException("cache manager is null");
        if (cacheName == null || manager.getCacheConfiguration(cacheName) == null) throw new IllegalArgumentException("no cache named " + cacheName);
        if (manager.getMembers() == null) throw new IllegalArgumentException("cache manager " + manager + " is not clustered: there is nothing to resolve");
        List<Map<Address, Long>> rounds = new ArrayList<>();
        while (rounds.size() < MAX_ROUNDS) {
            Map<Address, Long> resolved = new LinkedHashMap<>();
            rounds.add(resolved);
            for (Address node : manager.getMembers()) {
                long n = resolveOn(manager, node, new Resolve(cacheName));
                resolved.put(node, n);
                if (n == 0) return new Report(rounds); // a run sees every owner's copies: none left to resolve
            }
        }
        throw new IllegalStateException("cache " + cacheName + " still has conflicts after " + MAX_ROUNDS + " rounds of resolution; "
                + "conflicts each node resolved, round by round: " + rounds);
    }

    /** Runs {@code task} on {@code node} alone and returns its answer. */
    private static long resolveOn(EmbeddedCacheManager manager, Address node, Resolve task) {
        Long answer = ClusterTasks.run(manager, Set.of(node), TIMEOUT_SECONDS, task, "conflict resolution of cache " + task.cacheName()).get(node);
        if (answer == null) throw new IllegalStateException("conflict resolution of cache " + task.cacheName() + " got no answer from " + node + " (did it leave?)");
        return answer;
    }

    /**
     * On one node: every conflict this node sees (a key whose owners' copies differ, or that some owner lacks) gets
     * the primary owner's entry on all owners, or the first other entry when the primary has none: Infinispan's
     * PREFERRED_NON_NULL. Answers how many conflicts it resolved.
     *
     * <p>Infinispan reads this node's copies from its memory only (the blind spot above); a key it reports as missing
     * here is looked up in this node's store before it counts as a conflict, so a run writes only real conflicts.
     * Copies are the same when their values are {@code equals} and their lifespans and max-idle times match (a value
     * class without {@code equals} makes every key held twice a conflict, and {@link #resolveAll} fails after
     * {@value ClusterRecovery#MAX_ROUNDS} rounds saying so).
     *
     * <p>Infinispan's own {@code resolveConflicts} fires a write per conflict all at once and only logs the writes that
     * fail; here one batch of up to {@value #BATCH} is in flight at a time and a failed write fails the task. The
     * writes wait until a pass over the conflicts ends, because Infinispan gives the whole pass one deadline (the state
     * transfer timeout).
     * A pass keeps the first {@value #PASS} conflicts, which bounds the memory, and passes repeat until one finds no
     * more. (A pass always runs to the end: Infinispan considers a pass closed early still in progress.)
     */
    record Resolve(String cacheName) implements SerializableFunction<EmbeddedCacheManager, Long> {
        static final int PASS = 10_000;
        static final int BATCH = 500;
        /** Passes in one run: 1,000,000 conflicts; a run that stops here leaves the rest to the next one. */
        static final int MAX_PASSES = 100;

        @Override
        public Long apply(EmbeddedCacheManager manager) {
            AdvancedCache<Object, Object> cache = manager.getCache(cacheName).getAdvancedCache();
            NonBlockingStore<Object, Object> store = storeOf(cache);
            long resolved = 0;
            boolean more = true;
            for (int pass = 0; more && pass < MAX_PASSES; pass++) {
                List<Copy> chosen = new ArrayList<>();
                more = findConflicts(cache, store, chosen);
                // the copies are in the cache's storage form (encoded bytes under an encoding such as protostream):
                // written through the cache as it is, they would be encoded again, as other keys and values
                write(cache.withStorageMediaType().withFlags(Flag.IGNORE_RETURN_VALUES), chosen);
                resolved += chosen.size();
            }
            return resolved;
        }

        /**
         * The cache's persistent store on this node: a {@link VarveStore}, or any other (the recovery is the same for
         * Infinispan's own file stores).
         */
        @SuppressWarnings({"unchecked", "rawtypes"}) // the persistence manager hands stores out untyped
        private static NonBlockingStore<Object, Object> storeOf(AdvancedCache<Object, Object> cache) {
            Set<NonBlockingStore> stores = ComponentRegistry.of(cache).getComponent(PersistenceManager.class).getStores(NonBlockingStore.class);
            if (stores.isEmpty()) throw new IllegalArgumentException("cache " + cache.getName() + " has no persistent store: there is nothing to recover");
            return stores.iterator().next();
        }

        /** One owner's copy of a key: what a resolved write puts on every owner. */
        private record Copy(Object key, Object value, Metadata metadata) {
            boolean sameAs(Copy o) {
                return Objects.equals(value, o.value) && lifespan() == o.lifespan() && maxIdle() == o.maxIdle();
            }

            private long lifespan() {
                return metadata == null ? -1 : metadata.lifespan();
            }

            private long maxIdle() {
                return metadata == null ? -1 : metadata.maxIdle();
            }
        }

        /**
         * Adds the chosen copy of each true conflict to {@code chosen}, the first {@value #PASS}; true if there were
         * more. Infinispan gives this node's copy from its memory only, so where that is missing this node's store is
         * asked: a key is a conflict only if some owner really lacks it or the copies differ.
         */
        private static boolean findConflicts(AdvancedCache<Object, Object> cache, NonBlockingStore<Object, Object> store, List<Copy> chosen) {
            LocalizedCacheTopology topology = cache.getDistributionManager().getCacheTopology();
            Address self = topology.getLocalAddress();
            boolean more = false;
            try (Stream<Map<Address, CacheEntry<Object, Object>>> conflicts = ConflictManagerFactory.get(cache).getConflicts()) {
                for (Map<Address, CacheEntry<Object, Object>> replicas : (Iterable<Map<Address, CacheEntry<Object, Object>>>) conflicts::iterator) {
                    if (chosen.size() == PASS) {
                        more = true;
                        continue;
                    }
                    Map<Address, Copy> copies = new HashMap<>();
                    Object key = null;
                    for (Map.Entry<Address, CacheEntry<Object, Object>> r : replicas.entrySet()) {
                        if (r.getValue() instanceof NullCacheEntry) continue;
                        key = r.getValue().getKey();
                        copies.put(r.getKey(), new Copy(key, r.getValue().getValue(), r.getValue().getMetadata()));
                    }
                    if (key == null) continue; // Infinispan reports no conflict of absent copies only
                    DistributionInfo owners = topology.getDistribution(key);
                    if (replicas.containsKey(self) && !copies.containsKey(self)) {
                        MarshallableEntry<Object, Object> stored = store.load(owners.segmentId(), key).toCompletableFuture().join();
                        if (stored != null) copies.put(self, new Copy(key, stored.getValue(), stored.getMetadata()));
                    }
                    Copy pick = copies.getOrDefault(owners.primary(), copies.values().iterator().next());
                    if (copies.size() < replicas.size() || copies.values().stream().anyMatch(c -> !c.sameAs(pick))) chosen.add(pick);
                }
            }
            return more;
        }

        /**
         * Writes the entries in {@code putAll}s of up to {@value #BATCH} that share their metadata (most entries have
         * the same: no lifespan), one at a time: a batch goes to each owner as one command, where single puts would cost
         * a round trip each.
         */
        private static void write(AdvancedCache<Object, Object> writer, List<Copy> copies) {
            Map<Metadata, Map<Object, Object>> byMetadata = new HashMap<>();
            for (Copy c : copies) {
                Metadata metadata = c.metadata() != null ? c.metadata() : new EmbeddedMetadata.Builder().build();
                Map<Object, Object> batch = byMetadata.computeIfAbsent(metadata, m -> new HashMap<>());
                batch.put(c.key(), c.value());
                if (batch.size() == BATCH) writer.putAll(byMetadata.remove(metadata), metadata);
            }
            byMetadata.forEach((metadata, batch) -> writer.putAll(batch, metadata));
        }
    }
}
