package dev.varve.infinispan;

import io.reactivex.rxjava3.core.Flowable;
import org.infinispan.AdvancedCache;
import org.infinispan.Cache;
import org.infinispan.commons.util.IntSet;
import org.infinispan.commons.util.IntSets;
import org.infinispan.distribution.DistributionManager;
import org.infinispan.encoding.DataConversion;
import org.infinispan.factories.ComponentRegistry;
import org.infinispan.manager.EmbeddedCacheManager;
import org.infinispan.marshall.persistence.PersistenceMarshaller;
import org.infinispan.persistence.manager.PersistenceManager;
import org.infinispan.persistence.spi.MarshallableEntry;
import org.infinispan.persistence.spi.PersistenceException;
import org.infinispan.util.function.SerializableFunction;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** What {@link CacheHistory} runs on each node, and the answer a node sends back. */
final class HistoryTasks {
    private HistoryTasks() {
    }

    /** The cache's Varve store on this node. */
    static VarveStore<Object, Object> storeOf(EmbeddedCacheManager manager, String cacheName) {
        Cache<Object, Object> cache = manager.getCache(cacheName);
        @SuppressWarnings({"unchecked", "rawtypes"})
        Set<VarveStore<Object, Object>> stores = (Set) ComponentRegistry.of(cache).getComponent(PersistenceManager.class).getStores(VarveStore.class);
        if (stores.isEmpty()) throw new IllegalArgumentException("cache " + cacheName + " has no Varve store on " + manager.getAddress());
        return stores.iterator().next();
    }

    /** Whether this node's store has a snapshot under the label. */
    record Known(String cacheName, String label) implements SerializableFunction<EmbeddedCacheManager, Boolean> {
        @Override
        public Boolean apply(EmbeddedCacheManager manager) {
            return storeOf(manager, cacheName).knowsLabel(label).toCompletableFuture().join();
        }
    }

    /** Snapshot this node's store under the label, recording the segments it is primary owner of right now. */
    record Declare(String cacheName, String label) implements SerializableFunction<EmbeddedCacheManager, Long> {
        @Override
        public Long apply(EmbeddedCacheManager manager) {
            AdvancedCache<Object, Object> cache = manager.getCache(cacheName).getAdvancedCache();
            DistributionManager dm = cache.getDistributionManager(); // null for a local cache: it owns every segment
            IntSet primary = dm != null ? dm.getCacheTopology().getLocalPrimarySegments()
                    : IntSets.immutableRangeSet(cache.getCacheConfiguration().clustering().hash().numSegments());
            return storeOf(manager, cacheName).snapshot(label, primary).toCompletableFuture().join();
        }
    }

    /** The entries of the segments this node recorded as primary under the label, as an encoded {@link Answer}. */
    record ReadAsOf(String cacheName, String label) implements SerializableFunction<EmbeddedCacheManager, byte[]> {
        @Override
        public byte[] apply(EmbeddedCacheManager manager) {
            VarveStore<Object, Object> store = storeOf(manager, cacheName);
            IntSet owned = store.ownedAsOf(label).toCompletableFuture().join();
            List<byte[]> keysAndValues = new ArrayList<>();
            if (!owned.isEmpty()) {
                for (MarshallableEntry<Object, Object> e : Flowable.fromPublisher(store.publishAsOf(label, owned)).blockingIterable()) {
                    keysAndValues.add(EntryCodec.bytes(e.getKeyBytes()));
                    keysAndValues.add(EntryCodec.bytes(e.getValueBytes()));
                }
            }
            return new Answer(owned.toIntArray(), keysAndValues).encode();
        }
    }

    /**
     * One node's answer: the segments it answers for and their entries, keys and values as the persistence
     * marshaller wrote them (so the wire carries plain bytes, whatever the cache's types).
     *
     * <pre>
     * segmentCount (4) | segment (4) x segmentCount | entryCount (4) | entryCount x (keyLength (4) | key | valueLength (4) | value)
     * </pre>
     */
    record Answer(int[] segments, List<byte[]> keysAndValues) {
        byte[] encode() {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            try (DataOutputStream out = new DataOutputStream(bytes)) {
                out.writeInt(segments.length);
                for (int s : segments) out.writeInt(s);
                out.writeInt(keysAndValues.size() / 2);
                for (byte[] b : keysAndValues) {
                    out.writeInt(b.length);
                    out.write(b);
                }
            } catch (IOException e) {
                throw new AssertionError(e); // not thrown: a ByteArrayOutputStream does not fail
            }
            return bytes.toByteArray();
        }

        static Answer decode(byte[] encoded) {
            try (DataInputStream in = new DataInputStream(new java.io.ByteArrayInputStream(encoded))) {
                int[] segments = new int[in.readInt()];
                for (int i = 0; i < segments.length; i++) segments[i] = in.readInt();
                int entries = in.readInt();
                List<byte[]> kv = new ArrayList<>(2 * entries);
                for (int i = 0; i < 2 * entries; i++) {
                    byte[] b = new byte[in.readInt()];
                    in.readFully(b);
                    kv.add(b);
                }
                return new Answer(segments, kv);
            } catch (IOException e) { // an EOFException: the counts ask for more bytes than the answer has
                throw new UncheckedIOException("a history answer of " + encoded.length + " bytes is cut short", e);
            }
        }

        /**
         * Adds the entries to {@code out} as the caller's types: the store holds them in the cache's storage form
         * (with an encoding such as protostream, wrapped encoded bytes), which {@code cache}'s conversions undo as a
         * read through it does.
         */
        @SuppressWarnings("unchecked")
        <K, V> void putEntries(Map<K, V> out, PersistenceMarshaller marshaller, AdvancedCache<K, V> cache) {
            DataConversion keys = cache.getKeyDataConversion();
            DataConversion values = cache.getValueDataConversion();
            try {
                for (int i = 0; i < keysAndValues.size(); i += 2)
                    out.put((K) keys.fromStorage(marshaller.objectFromByteBuffer(keysAndValues.get(i))),
                            (V) values.fromStorage(marshaller.objectFromByteBuffer(keysAndValues.get(i + 1))));
            } catch (IOException | ClassNotFoundException e) {
                throw new PersistenceException("cannot unmarshal an entry read as of a snapshot", e);
            }
        }
    }
}
