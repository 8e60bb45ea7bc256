package dev.varve.infinispan;

import dev.varve.engine.Cursor;
import dev.varve.engine.SnapshotView;
import dev.varve.engine.Table;
import io.reactivex.rxjava3.core.Flowable;
import org.infinispan.commons.CacheConfigurationException;
import org.infinispan.commons.configuration.ConfiguredBy;
import org.infinispan.commons.time.TimeService;
import org.infinispan.commons.util.IntSet;
import org.infinispan.commons.util.IntSets;
import org.infinispan.commons.util.Util;
import org.infinispan.configuration.cache.ClusteringConfiguration;
import org.infinispan.configuration.global.GlobalStateConfiguration;
import org.infinispan.conflict.EntryMergePolicy;
import org.infinispan.conflict.MergePolicy;
import org.infinispan.marshall.persistence.PersistenceMarshaller;
import org.infinispan.persistence.spi.InitializationContext;
import org.infinispan.persistence.spi.MarshallableEntry;
import org.infinispan.persistence.spi.MarshallableEntryFactory;
import org.infinispan.persistence.spi.NonBlockingStore;
import org.infinispan.persistence.spi.PersistenceException;
import org.infinispan.util.concurrent.BlockingManager;
import org.reactivestreams.Publisher;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Predicate;

/**
 * An Infinispan {@link NonBlockingStore} backed by Varve: each cache has its own Varve store in
 * {@code <location>/<cache name>}, and each segment is one partition of a caller-placed table, so removing a
 * segment is a partition destroy and a segment's entries are one B+tree scan. The whole {@link MarshallableEntry}
 * is kept (value, metadata, internal metadata, created, last used) and its expiry-index entry is written in the same
 * atomic Varve write, which {@link #purgeExpired()} uses instead of scanning every entry.
 *
 * <p>Every call that touches Varve runs on Infinispan's {@link BlockingManager}; no method blocks its caller.
 *
 * <p>Characteristics: {@code SEGMENTABLE}, {@code BULK_READ}, {@code EXPIRATION}. Not {@code TRANSACTIONAL}:
 * Varve's atomic batch applies a set of writes at once, but it has no durable prepared state that survives a crash
 * between prepare and commit, so a two-phase commit cannot be carried faithfully; Infinispan's non-transactional
 * store path (with {@link #batch} as one atomic write) is used instead.
 *
 * <p>History: {@link #snapshot(String, IntSet)} declares a Varve snapshot under a label and {@link #publishAsOf}
 * reads the cache's entries as of it; {@link CacheHistory} does both on every node of a cluster.
 */
@ConfiguredBy(VarveStoreConfiguration.class)
public class VarveStore<K, V> implements NonBlockingStore<K, V> {
    private static final Logger LOG = LoggerFactory.getLogger(VarveStore.class);
    private VarveStoreConfiguration configuration;
    private BlockingManager blocking;
    private PersistenceMarshaller marshaller;
    private MarshallableEntryFactory<K, V> entryFactory;
    private TimeService timeService;
    private Path directory;
    private int segmentCount;
    private volatile ReopeningTables tables;

    @Override
    public CompletionStage<Void> start(InitializationContext ctx) {
        configuration = ctx.getConfiguration();
        blocking = ctx.getBlockingManager();
        marshaller = ctx.getPersistenceMarshaller();
        entryFactory = ctx.getMarshallableEntryFactory();
        timeService = ctx.getTimeService();
        segmentCount = ctx.getCache().getCacheConfiguration().clustering().hash().numSegments();
        warnIfMergesRemove(ctx.getCache().getName(), ctx.getCache().getCacheConfiguration().clustering());
        directory = storeDirectory(configuration.location(), ctx.getGlobalConfiguration().globalState(), ctx.getCache().getName());
        tables = new ReopeningTables(directory, configuration.fileIO(),
                () -> new SegmentTables(configuration.varveConfig(directory), configuration.fileIO(), segmentCount),
                !ctx.getCache().getCacheConfiguration().clustering().cacheMode().isClustered(), timeService::time);
        return blocking.runBlocking(() -> {
            try {
                tables.start();
            } catch (IllegalArgumentException e) {
                throw new CacheConfigurationException("cannot open the Varve store of cache " + ctx.getCache().getName() + " in " + directory
                        + ": " + e.getMessage(), e);
            }
        }, "varve-open");
    }

    /**
     * The cache's store directory: its name under the configured location, or under the global persistent location
     * when none is configured. A relative location lies under the global persistent location when global state is on,
     * as with Infinispan's own file stores (else the working directory would decide where the data is). Refuses a
     * start with neither (the store would land in the working directory) and a cache name that would leave the
     * location (absolute, {@code ..}, a path separator).
     */
    static Path storeDirectory(String location, GlobalStateConfiguration globalState, String cacheName) {
        if (location == null && !globalState.enabled()) throw new CacheConfigurationException("the Varve store of cache " + cacheName
                + " has no location: set its location, or enable the global state with a persistent location");
        Path base = location == null ? Path.of(globalState.persistentLocation())
                : globalState.enabled() ? Path.of(globalState.persistentLocation()).resolve(location) : Path.of(location);
        Path root = base.toAbsolutePath().normalize();
        Path name;
        try {
            name = Path.of(cacheName);
        } catch (InvalidPathException e) {
            throw new CacheConfigurationException("cache name '" + cacheName + "' cannot name a directory: " + e.getMessage(), e);
        }
        Path dir = root.resolve(name).normalize();
        if (name.isAbsolute() || !root.equals(dir.getParent()))
            throw new CacheConfigurationException("cache name '" + cacheName + "' would put its Varve store outside the location " + root
                    + " (" + dir + "); a cache whose store is Varve needs a name without path separators or '..'");
        return dir;
    }

    /**
     * PREFERRED_ALWAYS takes the preferred partition's entry even when it has none, and REMOVE_ALL removes every
     * conflicting key: at a merge (after a split, or after a restart that formed the cluster in pieces, as a node whose
     * join times out does) either deletes from every store a key only the other side holds.
     */
    private static void warnIfMergesRemove(String cacheName, ClusteringConfiguration clustering) {
        EntryMergePolicy<?, ?> policy = clustering.partitionHandling().mergePolicy();
        if (clustering.cacheMode().isClustered() && (policy == MergePolicy.PREFERRED_ALWAYS || policy == MergePolicy.REMOVE_ALL)) {
            LOG.warn("cache {}: partition handling's merge policy {} removes from the Varve stores every key that only the non-preferred side "
                    + "of a merge holds (after a split, or a restart that formed the cluster in pieces); PREFERRED_NON_NULL keeps them", cacheName, policy);
        }
    }

    @Override
    public CompletionStage<Void> stop() {
        return blocking.runBlocking(this::close, "varve-stop");
    }

    /**
     * Stops the store and deletes its directory. Infinispan 15.2 does not call this when a cache is removed (it clears
     * the store and stops it, leaving the directory and its history), only when migrating a store.
     */
    @Override
    public CompletionStage<Void> destroy() {
        return blocking.runBlocking(() -> {
            close();
            Util.recursiveFileRemove(directory.toFile());
        }, "varve-destroy");
    }

    private void close() {
        if (tables != null) tables.stop();
    }

    @Override
    public Set<Characteristic> characteristics() {
        return EnumSet.of(Characteristic.SEGMENTABLE, Characteristic.BULK_READ, Characteristic.EXPIRATION);
    }

    /** Whether the store can serve the cache: a failed store of a local cache is reopened here ({@link ReopeningTables}). */
    @Override
    public CompletionStage<Boolean> isAvailable() {
        return blocking.supplyBlocking(() -> tables != null && tables.available(), "varve-available");
    }

    private SegmentTables tables() {
        ReopeningTables t = tables;
        if (t == null) throw new PersistenceException("the Varve store of " + directory + " is not running");
        return t.current();
    }

    private void checkSegment(int segment) {
        if (segment < 0 || segment >= segmentCount)
            throw new IllegalArgumentException("segment " + segment + " out of range [0, " + segmentCount + ")");
    }

    private byte[] keyBytes(Object key) {
        try {
            return marshaller.objectToByteBuffer(key);
        } catch (Exception e) {
            throw new PersistenceException("cannot marshal key " + key, e);
        }
    }

    private long now() {
        return timeService.wallClockTime();
    }

    @Override
    public CompletionStage<MarshallableEntry<K, V>> load(int segment, Object key) {
        checkSegment(segment);
        return blocking.supplyBlocking(() -> {
            byte[] stored = tables().get(segment, keyBytes(key));
            return stored == null || EntryCodec.isExpired(stored, now()) ? null : EntryCodec.decode(entryFactory, key, null, stored, true);
        }, "varve-load");
    }

    @Override
    public CompletionStage<Boolean> containsKey(int segment, Object key) {
        checkSegment(segment);
        return blocking.supplyBlocking(() -> {
            byte[] stored = tables().get(segment, keyBytes(key));
            return stored != null && !EntryCodec.isExpired(stored, now());
        }, "varve-contains");
    }

    @Override
    public CompletionStage<Void> write(int segment, MarshallableEntry<? extends K, ? extends V> entry) {
        checkSegment(segment);
        return blocking.runBlocking(() -> tables().put(segment, EntryCodec.bytes(entry.getKeyBytes()), EntryCodec.encode(entry)), "varve-write");
    }

    @Override
    public CompletionStage<Boolean> delete(int segment, Object key) {
        checkSegment(segment);
        return blocking.supplyBlocking(() -> tables().remove(segment, keyBytes(key)), "varve-delete");
    }

    /** Segments are partitions that always exist: a segment that arrives starts empty (it was destroyed on removal). */
    @Override
    public CompletionStage<Void> addSegments(IntSet segments) {
        segments.forEach((int s) -> checkSegment(s));
        return CompletableFuture.completedFuture(null);
    }

    @Override
    public CompletionStage<Void> removeSegments(IntSet segments) {
        segments.forEach((int s) -> checkSegment(s));
        return blocking.runBlocking(() -> segments.forEach((int s) -> tables().destroy(s)), "varve-remove-segments");
    }

    @Override
    public CompletionStage<Void> clear() {
        return blocking.runBlocking(() -> {
            for (int s = 0; s < segmentCount; s++) tables().destroy(s);
        }, "varve-clear");
    }

    /**
     * One atomic Varve write of every remove and write of the batch, when it fits one Varve write (one WAL record,
     * at most half the data region); a larger batch, such as a huge {@code putAll}, is written as consecutive atomic writes, each
     * entry always with its expiry-index entry (see {@link SegmentTables#apply}). The segment publishers are subscribed
     * together (they may be groups of one upstream), collected without blocking, and written on the blocking
     * manager. Infinispan never puts the same key in both publishers of one batch.
     */
    @Override
    public CompletionStage<Void> batch(int publisherCount, Publisher<SegmentedPublisher<Object>> removePublisher,
                                       Publisher<SegmentedPublisher<MarshallableEntry<K, V>>> writePublisher) {
        int concurrency = Math.max(1, publisherCount);
        Flowable<SegmentTables.Change> removes = Flowable.fromPublisher(removePublisher).flatMap(sp -> Flowable.fromPublisher(sp)
                .map(key -> change(sp.getSegment(), keyBytes(key), null)), concurrency);
        Flowable<SegmentTables.Change> writes = Flowable.fromPublisher(writePublisher).flatMap(sp -> Flowable.fromPublisher(sp)
                .map(e -> change(sp.getSegment(), EntryCodec.bytes(e.getKeyBytes()), EntryCodec.encode(e))), concurrency);
        return Flowable.merge(removes, writes).toList().toCompletionStage()
                .thenCompose(changes -> changes.isEmpty() ? CompletableFuture.<Void>completedFuture(null)
                        : blocking.runBlocking(() -> tables().apply(changes), "varve-batch"));
    }

    private SegmentTables.Change change(int segment, byte[] key, byte[] stored) {
        checkSegment(segment);
        return new SegmentTables.Change(segment, key, stored);
    }

    private IntSet orAll(IntSet segments) {
        return segments != null ? segments : IntSets.immutableRangeSet(segmentCount);
    }

    @Override
    public CompletionStage<Long> size(IntSet segments) {
        IntSet s = orAll(segments);
        return blocking.supplyBlocking(() -> {
            long now = now();
            long n = 0;
            for (int seg : s.toIntArray()) n += tables().size(seg, now);
            return n;
        }, "varve-size");
    }

    @Override
    public CompletionStage<Long> approximateSize(IntSet segments) {
        IntSet s = orAll(segments);
        return blocking.supplyBlocking(() -> {
            long n = 0;
            for (int seg : s.toIntArray()) n += tables().approximateSize(seg);
            return n;
        }, "varve-approximate-size");
    }

    @Override
    public Publisher<MarshallableEntry<K, V>> publishEntries(IntSet segments, Predicate<? super K> filter, boolean includeValues) {
        IntSet s = orAll(segments);
        return blocking.blockingPublisher(Flowable.defer(() -> {
            long now = now();
            return Flowable.fromArray(box(s.toIntArray())).concatMap(seg -> entriesOf(t -> t.scan(seg), now, filter, includeValues));
        }));
    }

    @Override
    public Publisher<K> publishKeys(IntSet segments, Predicate<? super K> filter) {
        return Flowable.fromPublisher(publishEntries(segments, filter, false)).map(MarshallableEntry::getKey);
    }

    /** The entries a cursor yields, decoded lazily (keys unmarshalled only when the filter or the caller asks). */
    private Flowable<MarshallableEntry<K, V>> entriesOf(CursorSource source, long now, Predicate<? super K> filter, boolean includeValues) {
        return Flowable.<byte[][], Cursor>generate(() -> source.open(tables()), (cursor, emitter) -> {
            if (cursor.next()) emitter.onNext(new byte[][]{cursor.key(), cursor.value()});
            else emitter.onComplete();
        }, Cursor::close)
                .filter(kv -> !EntryCodec.isExpired(kv[1], now))
                .map(kv -> EntryCodec.decode(entryFactory, null, kv[0], kv[1], includeValues))
                .filter(e -> filter == null || filter.test(e.getKey()));
    }

    private interface CursorSource {
        Cursor open(SegmentTables tables);
    }

    private static Integer[] box(int[] a) {
        Integer[] out = new Integer[a.length];
        for (int i = 0; i < a.length; i++) out[i] = a[i];
        return out;
    }

    @Override
    public Publisher<MarshallableEntry<K, V>> purgeExpired() {
        return blocking.blockingPublisher(Flowable.defer(() -> {
            long now = now();
            return Flowable.range(0, segmentCount).concatMapIterable(seg -> {
                List<MarshallableEntry<K, V>> purged = new ArrayList<>();
                for (SegmentTables.Purged p : tables().purge(seg, now)) purged.add(EntryCodec.decode(entryFactory, null, p.key(), p.stored(), true));
                return purged;
            });
        }));
    }

    // ---------------------------------------------------------------- history

    /**
     * Declares a Varve snapshot of this node's store under {@code label}, recording {@code ownedSegments} (the
     * segments this node can answer for as of the snapshot). Returns the Varve snapshot id. The snapshot holds
     * exactly the store writes that completed before the call.
     */
    public CompletionStage<Long> snapshot(String label, IntSet ownedSegments) {
        if (label == null || label.isEmpty()) throw new IllegalArgumentException("snapshot label is null or empty");
        if (ownedSegments == null) throw new IllegalArgumentException("owned segments are null");
        ownedSegments.forEach((int s) -> checkSegment(s));
        return blocking.supplyBlocking(() -> tables().snapshot(label, ownedSegments.toIntArray()), "varve-snapshot");
    }

    /** Whether this node's store has a snapshot recorded under {@code label}. */
    CompletionStage<Boolean> knowsLabel(String label) {
        if (label == null) throw new IllegalArgumentException("snapshot label is null");
        return blocking.supplyBlocking(() -> tables().labelled(label) != null, "varve-knows-label");
    }

    /** The segments this node recorded as owned under {@code label}; empty when the label is unknown here. */
    public CompletionStage<IntSet> ownedAsOf(String label) {
        if (label == null) throw new IllegalArgumentException("snapshot label is null");
        return blocking.supplyBlocking(() -> {
            SegmentTables.Labelled l = tables().labelled(label);
            IntSet owned = IntSets.mutableEmptySet(segmentCount);
            if (l != null) for (int seg : l.ownedSegments()) owned.set(seg);
            return owned;
        }, "varve-owned-as-of");
    }

    /**
     * The entries of {@code segments} as of the snapshot recorded under {@code label} (expired ones as of now
     * excluded, as in a live read). Fails with {@link IllegalArgumentException} when the label is unknown.
     */
    public Publisher<MarshallableEntry<K, V>> publishAsOf(String label, IntSet segments) {
        if (label == null) throw new IllegalArgumentException("snapshot label is null");
        IntSet s = orAll(segments);
        s.forEach((int seg) -> checkSegment(seg));
        return blocking.blockingPublisher(Flowable.using(() -> {
            SegmentTables.Labelled l = tables().labelled(label);
            if (l == null) throw new IllegalArgumentException("no snapshot labelled '" + label + "' in " + directory);
            return tables().asOf(l.snapshot());
        }, view -> {
            Table past = view.table(SegmentTables.ENTRIES);
            long now = now();
            return Flowable.fromArray(box(s.toIntArray())).concatMap(seg -> entriesOf(t -> past.partition(seg).scan(null, null), now, null, true));
        }, SnapshotView::close));
    }
}
