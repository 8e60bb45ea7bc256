package dev.varve.engine;

import dev.varve.checkpoint.CheckpointMarker;
import dev.varve.checkpoint.CheckpointMarkers;
import dev.varve.checkpoint.PageFileGenerations;
import dev.varve.config.ConfigLimits;
import dev.varve.config.VarveConfig;
import dev.varve.core.io.Closeables;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;
import dev.varve.core.page.Page;
import dev.varve.core.page.PageAccess;
import dev.varve.core.page.PageHeader;
import dev.varve.core.page.PageId;
import dev.varve.core.store.PageChecksum;
import dev.varve.core.store.PageStore;
import dev.varve.core.tree.BPlusTree;
import dev.varve.core.tree.CorruptTreeException;
import dev.varve.core.tree.PageLayout;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Builds a new store from a {@link SnapshotImage}'s pages: creates an empty store in an empty directory, writes the
 * image's page files over it and makes them durable (the writes run behind the caller, several at once, see {@link
 * ImageWrites}, and fsyncs behind the writes, on a thread of their own). The pages go straight into the page files, a
 * run of them per call: no WAL, no B+tree, no checkpoint.
 *
 * <p>Each page is checked as it arrives — its CRC, the page id it carries against where it goes, SavedAfter cleared
 * — and {@link #finish} checks the whole: every file holds exactly the pages its meta page counts, and
 * the files are exactly the catalog's and its tables' partitions. Until {@code finish} returns the directory holds
 * page files that no checkpoint or WAL vouches for, so a loader cut short (a crash, {@link #close} without finish)
 * leaves a directory that is not a store: the caller marks it so until finish has returned (snapshot shipping keeps
 * it under {@link Varve#INCOMING_DIR}). Not thread-safe.
 */
public final class ImageLoader implements AutoCloseable {
    /** An fsync of what was written starts behind the writes every this many bytes. */
    private static final long FLUSH_EVERY_BYTES = 64L << 20;

    private final VarveConfig config;
    private final FileIOFactory io;
    private final int pageSize;
    private final StoreLock lock;
    private final PageStore store;
    /** The pages written so far, by file id. */
    private final Map<Integer, BitSet> written = new TreeMap<>();
    /** The page count each file's meta page gives, once written (-1: not a meta page). */
    private final Map<Integer, Integer> metaCount = new HashMap<>();
    private final ExecutorService flusher = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "varve-image-flush");
        t.setDaemon(true);
        return t;
    });
    /** Files written since the last fsync started, and how many bytes. */
    private final Set<Integer> unflushed = new HashSet<>();
    private long unflushedBytes;
    private Future<?> flushing;
    /** Uncached handles by file id (null: that file's writes go through the page store). */
    private final Map<Integer, FileIO> uncached = new HashMap<>();
    /** The uncached writes, run behind {@link #write} (cached ones go through the page store at once). */
    private final ImageWrites writes;
    private boolean done;
    /** The files fsynced and closed once all their pages were written (see {@link #release}). */
    private final Set<Integer> durable = new HashSet<>();
    /** The files the flush under way forces, which stay open until it is done. */
    private List<Integer> flushingFiles = List.of();
    /** A meta page, copied to read its page count from. */
    private ByteBuffer metaCopy;

    private ImageLoader(VarveConfig config, FileIOFactory io) {
        this.config = config;
        this.io = io;
        this.pageSize = config.pageSize();
        this.writes = new ImageWrites(pageSize);
        this.lock = StoreLock.acquire(config.path(), "store");
        try {
            // the empty store's checkpoint made its id durable: the image's files carry it (a loaded image is a new store)
            long storeId = PageFileGenerations.durableStoreId(new CheckpointMarkers(io, config.path().resolve("checkpoints")));
            this.store = new PageStore(io, config.path().resolve("pages"), pageSize, storeId);
            store.tidy();
        } catch (RuntimeException e) {
            lock.release();
            throw e;
        }
    }

    /** A loader into {@code config.path()}, which must be missing or empty; the image's page size must be {@code config.pageSize()}. */
    public static ImageLoader create(VarveConfig config) {
        return create(config, FileIOFactory.standard());
    }

    /** As {@link #create(VarveConfig)}, with the store's files opened through {@code io}. */
    public static ImageLoader create(VarveConfig config, FileIOFactory io) {
        if (config == null) throw new IllegalArgumentException("config is null");
        Path dir = config.path();
        if (Files.exists(dir)) {
            try (Stream<Path> entries = Files.list(dir)) {
                if (entries.findAny().isPresent())
                    throw new IllegalArgumentException("an image is loaded into a new store, and " + dir + " is not empty");
            } catch (IOException e) {
                throw new StorageException("cannot list the directory: " + e.getMessage(), dir, e);
            }
        }
        // an empty store, closed by a checkpoint: its WAL and markers say "nothing to replay"; the memory it takes
        // while open is not part of its files, so the least will do
        Varve.open(config.toBuilder().dataRegionSize(ConfigLimits.DATA_REGION_SIZE_MIN).checkpointBufferSize(ConfigLimits.CHECKPOINT_BUFFER_SIZE_MIN)
                .captureBufferSize(ConfigLimits.CAPTURE_BUFFER_SIZE_MIN).build(), io).close();
        unboundLargestValue(new CheckpointMarkers(io, dir.resolve("checkpoints")));
        return new ImageLoader(config, io);
    }

    /**
     * The empty store's markers bound its values by the largest it was given, none; the image's pages, written past
     * the write path, hold values of any size. So its markers are rewritten to bound nothing below the longest value
     * there can be, as markers from before the field do: replay reserves, for each operation, the overflow chain it
     * may free by that bound. The start marker first: it is the one recovery reads.
     */
    private static void unboundLargestValue(CheckpointMarkers markers) {
        long id = markers.latestStartId();
        for (Optional<CheckpointMarker> m : List.of(markers.start(id), markers.end(id)))
            m.ifPresent(marker -> markers.write(marker.withLargestValue(CheckpointMarker.LARGEST_VALUE_UNKNOWN)));
    }

    /**
     * Writes whole pages ({@code pages.remaining()} bytes, a multiple of the page size) into file {@code fileId} from
     * index {@code firstIndex} on, in any order (a {@link SnapshotImage} hands out a file's meta page last); each page
     * once.
     *
     * @throws CorruptionException      when a page's CRC or page id is wrong, or it carries snapshot state: nothing of the call is written
     * @throws IllegalArgumentException when a page of the run was written before, or the run is not whole pages
     * @throws StorageException         when a write begun by this call or an earlier one failed (it names the file)
     */
    public void write(int fileId, int firstIndex, ByteBuffer pages) {
        if (done) throw new IllegalStateException("the image is finished or closed");
        if (fileId < 0) throw new IllegalArgumentException("file id " + fileId + " is negative");
        if (pages == null || pages.remaining() == 0 || pages.remaining() % pageSize != 0)
            throw new IllegalArgumentException("a page run is whole pages of " + pageSize + " bytes, got " + (pages == null ? "null" : pages.remaining() + " bytes"));
        if (firstIndex < 0) throw new IllegalArgumentException("page index " + firstIndex + " is negative");
        int count = pages.remaining() / pageSize;
        BitSet before = written.get(fileId);
        int again = before == null ? -1 : before.nextSetBit(firstIndex);
        if (again >= 0 && again < firstIndex + count)
            throw new IllegalArgumentException("page " + PageId.toString(PageId.of(fileId, again)) + " of the image was written before");
        ByteBuffer le = pages.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < count; i++) {
            int at = pages.position() + i * pageSize;
            long pageId = PageId.of(fileId, firstIndex + i);
            String wrong = null;
            if (PageChecksum.stored(pages, at) != PageChecksum.compute(pages, at, pageSize)) wrong = "checksum mismatch";
            else if (PageChecksum.storedPageId(pages, at) != pageId) wrong = "carries page id " + PageId.toString(PageChecksum.storedPageId(pages, at));
            else if (le.getLong(at + PageHeader.SAVED_AFTER_OFFSET) != 0) wrong = "carries the snapshot state of another store (SavedAfter set)";
            if (wrong != null)
                throw new CorruptionException("image page " + PageId.toString(pageId) + ": " + wrong, store.pathOf(fileId), store.offsetOf(pageId));
        }
        int metaPages = firstIndex == 0 ? countOf(fileId, pages, pages.position()) : -1; // read before pages is handed over
        FileIO uncached = uncachedFile(fileId);
        if (uncached == null) {
            store.write(PageId.of(fileId, firstIndex), pages, pages.position(), count);
            writes.giveBack(pages);
        } else {
            writes.write(uncached, store.pathOf(fileId), pages, store.offsetOf(PageId.of(fileId, firstIndex)));
        }
        BitSet all = written.computeIfAbsent(fileId, f -> new BitSet());
        all.set(firstIndex, firstIndex + count);
        if (firstIndex == 0) metaCount.put(fileId, metaPages);
        unflushed.add(fileId);
        unflushedBytes += (long) count * pageSize;
        Integer fileCount = metaCount.get(fileId);
        if (fileCount != null && all.nextClearBit(0) == fileCount && all.length() == fileCount) release(fileId);
        else if (unflushedBytes >= FLUSH_EVERY_BYTES) flushBehind();
    }

    /**
     * A buffer for a run of up to {@code bytes} (whole pages) to be filled and handed to {@link #write}, which then
     * writes from it as it is, without copying it into one of its own: the caller leaves it alone once handed over.
     * The same buffer until then. Optional: {@code write} takes a run in any buffer.
     */
    public ByteBuffer runBuffer(int bytes) {
        if (done) throw new IllegalStateException("the image is finished or closed");
        if (bytes <= 0 || bytes % pageSize != 0) throw new IllegalArgumentException("a page run is whole pages of " + pageSize + " bytes, got " + bytes + " bytes");
        return writes.buffer(bytes);
    }

    /**
     * The page count the meta page of {@code fileId} at {@code at} in {@code pages} gives, or -1 when it is not a
     * meta page ({@link #finish} says so).
     */
    private int countOf(int fileId, ByteBuffer pages, int at) {
        if (metaCopy == null) metaCopy = ByteBuffer.allocateDirect(pageSize);
        metaCopy.clear().put(pages.duplicate().position(at).limit(at + pageSize)).clear();
        try {
            return PageLayout.pageCount(new Page(metaCopy, 0, pageSize), PageId.of(fileId, 0));
        } catch (RuntimeException notMeta) {
            return -1;
        }
    }

    /**
     * Fsyncs and closes a file whose pages are all written (its meta page counts them): an image arrives file by file,
     * and a file held open until the end took a descriptor or two per page file of the store, which a store of many
     * partitions ran out of. The fsync comes first, through the descriptor that wrote the file: Linux reports a
     * write-back error to the descriptors open when it happened, not to one opened later, so an fsync after a reopen
     * could succeed with pages lost. {@link #finish} opens the files again one at a time, to check them.
     */
    private void release(int fileId) {
        writes.drain(); // its writes are on the disk before its fsync
        if (flushingFiles.contains(fileId)) awaitFlush(); // the flusher's fsync of it must not meet a closed channel
        if (durable.add(fileId)) store.force(fileId);
        unflushed.remove(fileId);
        FileIO u = uncached.remove(fileId);
        uncached.put(fileId, null); // writes to it, if any came, go through the page store
        try {
            if (u != null) u.close();
        } catch (IOException e) {
            throw new StorageException("cannot close the page file: " + e.getMessage(), store.pathOf(fileId), e);
        } finally {
            store.release(fileId);
        }
    }

    /**
     * The uncached handle of a page file ({@link FileIOFactory#openUncached}), or null when writes to it go through
     * the page store: an image is written once and read back by nobody soon, so its pages go to the disk without
     * being copied into, and crowding, the operating system's cache.
     */
    private FileIO uncachedFile(int fileId) {
        if (uncached.containsKey(fileId)) return uncached.get(fileId);
        Path path = store.create(fileId);
        FileIO f;
        try {
            f = io.openUncached(path, pageSize).orElse(null);
        } catch (IOException e) {
            throw new StorageException("cannot open the page file for the image: " + e.getMessage(), path, e);
        }
        uncached.put(fileId, f);
        return f;
    }

    /**
     * Starts an fsync of the files written since the last one on the flusher thread, after waiting for that one:
     * the disk writes while the next pages arrive, instead of all of them at the end, and a failed fsync fails the
     * load at the next call.
     */
    private void flushBehind() {
        awaitFlush();
        writes.drain(); // an fsync covers the writes before it
        List<Integer> files = new ArrayList<>(unflushed);
        unflushed.clear();
        unflushedBytes = 0;
        flushingFiles = files;
        flushing = flusher.submit(() -> {
            for (int f : files) store.force(f);
        });
    }

    private void awaitFlush() {
        if (flushing == null) return;
        try {
            flushing.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new StorageException("interrupted waiting for an fsync of the image", config.path(), e);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException r) throw r;
            throw new StorageException("fsync of the image failed: " + e.getCause(), config.path(), e.getCause());
        } finally {
            flushing = null;
            flushingFiles = List.of();
        }
    }

    /**
     * Checks the image is whole and fsyncs its files: the directory then holds a store, which {@link Varve#open}
     * opens. Returns its tables as its catalog and meta pages say (name, placement, partitions, entries), for the
     * caller to check against what the image should hold.
     *
     * @throws CorruptionException when a file holds other pages than its meta page counts, the catalog's tree fails
     *                             its check, or the files are not the catalog's partitions; the directory is then left
     *                             as it is (not a store)
     */
    public List<SnapshotImage.TableImage> finish() {
        if (done) throw new IllegalStateException("the image is finished or closed");
        if (!written.containsKey(Catalog.FILE_ID)) throw new CorruptionException("the image holds no catalog (file 0)", store.pathOf(Catalog.FILE_ID), 0);
        ByteBuffer meta = ByteBuffer.allocateDirect(pageSize);
        awaitFlush();
        // a file at a time, each closed again once checked: see release
        for (Map.Entry<Integer, BitSet> f : written.entrySet()) {
            long metaId = PageId.of(f.getKey(), 0);
            if (!f.getValue().get(0)) throw new CorruptionException("image file lacks its meta page", store.pathOf(f.getKey()), 0);
            store.read(metaId, meta, 0);
            int count = PageLayout.pageCount(new Page(meta, 0, pageSize), metaId);
            int missing = f.getValue().nextClearBit(0);
            if (missing < count || f.getValue().length() > count)
                throw new CorruptionException("image file holds " + f.getValue().cardinality() + " pages, its meta page counts "
                        + count + (missing < count ? " (page " + missing + " missing)" : ""),
                        store.pathOf(f.getKey()), store.offsetOf(PageId.of(f.getKey(), Math.min(missing, count))));
            release(f.getKey()); // each file was released (fsynced) once its pages were in: this closes it again
        }
        FilePages files = new FilePages();
        // the catalog is read below, and a reader trusts its tree (a cell's value length sizes the value before its
        // overflow chain is followed): checked whole first, as verify checks a tree, without reading any value into
        // memory; it is a few pages, and the image's sender stamped every page CRC, damaged or forged
        try {
            new BPlusTree(files, Catalog.FILE_ID).verify();
        } catch (CorruptTreeException e) {
            throw new CorruptionException("the image's catalog fails its check: " + e.getMessage(), store.pathOf(Catalog.FILE_ID),
                    e.pageId() == PageId.NONE ? 0 : store.offsetOf(e.pageId()), e);
        }
        List<Catalog.Entry> catalog = new Catalog(files).all();
        Set<Integer> expected = new HashSet<>();
        expected.add(Catalog.FILE_ID);
        for (Catalog.Entry e : catalog) for (int p = 0; p < e.partitions(); p++) expected.add(PageId.fileId(e.id(), p));
        if (!expected.equals(written.keySet()))
            throw new CorruptionException("the image's page files " + written.keySet() + " are not its catalog's " + expected, config.path(), 0);
        List<SnapshotImage.TableImage> tables = new ArrayList<>();
        store.release(Catalog.FILE_ID);
        for (Catalog.Entry e : catalog) {
            long entries = 0;
            for (int p = 0; p < e.partitions(); p++) {
                entries += new BPlusTree(files, PageId.fileId(e.id(), p)).size();
                store.release(PageId.fileId(e.id(), p));
            }
            tables.add(new SnapshotImage.TableImage(e.name(), e.options(), entries));
        }
        close();
        return List.copyOf(tables);
    }

    /** The written pages as the catalog's B+tree reads them, straight from their files (each read checked). */
    private final class FilePages implements PageAccess.ReadOnly {
        @Override
        public int pageSize() {
            return pageSize;
        }

        @Override
        public Page acquireRead(long pageId) {
            Page p = new Page(ByteBuffer.allocateDirect(pageSize), 0, pageSize);
            store.read(pageId, p.buffer(), 0);
            return p;
        }

        @Override
        public void releaseRead(Page page) {
            // a private copy: nothing to release
        }

        @Override
        public String readOnlyReason() {
            return "an image being loaded is read only to check it";
        }
    }

    /** Releases the directory; without {@link #finish} it is left holding an unfinished image, not a store. */
    @Override
    public void close() {
        if (done) return;
        done = true;
        writes.close(); // before the files close: a write under way ends first
        flusher.shutdown(); // not shutdownNow: an interrupt would close the file channel under the fsync
        try {
            flusher.awaitTermination(1, TimeUnit.MINUTES); // an fsync under way finishes before its file closes
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try {
            List<AutoCloseable> files = new ArrayList<>(uncached.values());
            files.add(store);
            Closeables.closeAll(files.toArray(AutoCloseable[]::new));
        } finally {
            lock.release();
        }
    }
}
