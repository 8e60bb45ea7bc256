package dev.varve.engine;

import dev.varve.checkpoint.CheckpointMarker;
import dev.varve.checkpoint.CheckpointMarkers;
import dev.varve.checkpoint.PageFileGenerations;
import dev.varve.checkpoint.RecoveryFileReader;
import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.DamageSink;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;
import dev.varve.core.store.PageFileCheck;
import dev.varve.core.store.PageStore;
import dev.varve.core.wal.WalFileCheck;
import dev.varve.snapshot.ArchiveFileCheck;
import dev.varve.snapshot.DroppedSnapshot;
import dev.varve.snapshot.RetentionFile;
import dev.varve.snapshot.SnapshotRecord;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.function.LongPredicate;
import java.util.function.ToLongFunction;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What operator tools need to look into a store directory without changing it: the layout-bound configuration read
 * from the files ({@link #detectConfig}), an offline check of every file's checksums ({@link #checkFiles}), the
 * checkpoint markers' state ({@link #lastCheckpoint}) and the WAL's records ({@link WalInspector}). Everything here
 * reads through a {@link MemoryOverlayIO}, so not one byte of the directory changes, and under the store's shared
 * lock, so no writer moves the files meanwhile (it fails while one has the store open). The structure of an open
 * store is checked by {@link StoreVerifier}.
 */
public final class StoreInspector {
    /** Data region of a tool's read-only open: small, since tools read and recovery checkpoints when short. */
    private static final long TOOL_REGION_BYTES = 64L << 20;
    private static final long TOOL_BUFFER_BYTES = 4L << 20;
    /** A recovery file's name ({@link CheckpointMarkers#recoveryFilePath}); group 1 is the checkpoint id. */
    private static final Pattern RECOVERY_FILE = Pattern.compile("cp-(\\d{16})-recovery-\\d{2,}\\.bin");

    /** One damaged spot: file, byte offset, what is wrong. */
    public record Damage(Path file, long offset, String what) {
        @Override
        public String toString() {
            return file + " at offset " + offset + ": " + what;
        }
    }

    /**
     * A tail of an archive file that recovery cuts (records past the checkpoint mark, which replay writes again): the
     * file, the first byte cut and the bytes cut — the whole file when recovery deletes it.
     */
    public record Cut(Path file, long from, long bytes) {
    }

    /**
     * A page of a page file that fails its check but that recovery replaces without reading it — one a crash tore
     * while a checkpoint wrote it, put back from that checkpoint's recovery data: the file, its offset, what was found.
     */
    public record Restored(Path file, long offset, String found) {
    }

    /**
     * Files and records an offline check read, the archive tails recovery cuts, the torn pages it restores, and
     * damage found.
     */
    public record FileCheck(long pages, int walSegments, long walRecords, String walTornTail, int markers, int recoveryFiles,
                            long archiveRecords, List<Cut> archiveCut, List<Restored> pagesRestored, List<Damage> damage) {
    }

    /**
     * What a recovery run in memory did to the files: the bytes it keeps of each archive file ({@code Long.MAX_VALUE}
     * for all, -1 when it deletes it), and whether it replaces a page without reading it from its file.
     */
    record Recovered(ToLongFunction<Path> archiveBytesKept, LongPredicate pageRestored) {
        /** No recovery run: every byte on disk counts. */
        static final Recovered NONE = new Recovered(ArchiveFileCheck.KEEP_ALL, pageId -> false);
    }

    /**
     * The latest checkpoint's markers: whether its end marker is there ({@code complete}; if not, the crash hit its
     * page writes and recovery restores them), where its recovery data is ({@code "recovery files"} or
     * {@code "physical wal"}) and how many recovery files of it are on disk (others a crash left are counted by
     * {@link #recoveryFilesOnDisk}), the store id its page files must carry ({@code storeId}, 0 when no marker
     * names one: the markers were written by an earlier build), and the largest value the store had been given when
     * its start marker was written ({@code largestValue}, in bytes; -1 when the marker does not record it: written by
     * an earlier build, or the store was loaded from a snapshot image), by which replay bounds the overflow chain an
     * operation may free.
     */
    public record CheckpointState(long id, long markLsn, long prevMarkLsn, boolean complete, String recoveryData, int recoveryFiles,
                                  long storeId, int largestValue) {
    }

    /**
     * A live snapshot as tools show it: {@code keptBy} is the retention rule that keeps it — a keepAll rule of a level
     * up to its rank if there is one, else that of the highest level up to its rank that keeps it — and {@code pinned}
     * says that rule keeps it unconditionally (keepAll, no byte budget): nothing can drop it.
     */
    public record SnapshotDetail(long id, int rank, Instant declared, long walLsn, long archiveBytes, String keptBy, boolean pinned) {
    }

    /** A snapshot the retention policy dropped: when, and by which rules. */
    public record DroppedDetail(long id, Instant dropped, String why) {
    }

    /**
     * The snapshots below {@code below} that are not live, all dropped by {@code by}, whose drops the store no longer
     * details: the snapshot and drop logs keep the live snapshots' records (those below {@code below} too, kept for good
     * say) and the recent history, and the records of older drops were compacted away.
     */
    public record DroppedBefore(long below, Instant by) {
    }

    private StoreInspector() {
    }

    /** The live snapshots of {@code store}, oldest first. */
    public static List<SnapshotDetail> snapshots(Varve store) {
        if (store == null) throw new IllegalArgumentException("store must not be null");
        Engine e = store.engine();
        e.checkOpen();
        RankTreePolicy policy = e.config.retention();
        List<SnapshotDetail> out = new ArrayList<>();
        for (SnapshotRecord r : e.archive.snapshots()) {
            // a snapshot lives while any level up to its rank keeps it: the rule shown is one that does, not its rank's own
            int level = e.archive.keptAt(r.id());
            Retention rule = level == 0 ? null : policy.levels().get(level - 1);
            out.add(new SnapshotDetail(r.id(), r.rank(), Instant.ofEpochMilli(r.declaredMillis()), r.walLsn(), e.archive.archiveBytes(r.id()),
                    rule == null ? "none (aged out: dropped at the policy's next check)" : rule.toString(),
                    rule != null && rule.equals(Retention.keepAll()) && policy.budgetBytes().isEmpty()));
        }
        return out;
    }

    /** The snapshots the retention policy dropped that the store still details, by id (older ones: {@link #droppedBefore}). */
    public static List<DroppedDetail> dropped(Varve store) {
        if (store == null) throw new IllegalArgumentException("store must not be null");
        Engine e = store.engine();
        e.checkOpen();
        List<DroppedDetail> out = new ArrayList<>();
        for (DroppedSnapshot d : e.archive.detailedDrops()) out.add(new DroppedDetail(d.id(), Instant.ofEpochMilli(d.droppedMillis()), d.why()));
        return out;
    }

    /** The dropped snapshots the store no longer details, if the logs were ever compacted. */
    public static java.util.Optional<DroppedBefore> droppedBefore(Varve store) {
        if (store == null) throw new IllegalArgumentException("store must not be null");
        Engine e = store.engine();
        e.checkOpen();
        long below = e.archive.dropHorizon();
        return below <= 1 ? java.util.Optional.empty() : java.util.Optional.of(new DroppedBefore(below, Instant.ofEpochMilli(e.archive.dropHorizonMillis())));
    }

    /**
     * A configuration for {@code dir} whose layout-bound fields match its files: page size (page file headers), WAL
     * segment size (segment headers), rank levels (kept all: a tool drops nothing), Skippy levels and node entries and
     * the archive segment size (archive files); memory sizes small, for a tool.
     *
     * @throws IllegalArgumentException if {@code dir} holds no store
     * @throws IllegalStateException    if it holds an unfinished transfer ({@link Varve#INCOMING_DIR})
     * @throws StorageException         if this user may not read it
     */
    public static VarveConfig detectConfig(Path dir) {
        if (dir == null) throw new IllegalArgumentException("dir must not be null");
        return detectConfig(dir, dir.resolve("archive"));
    }

    /**
     * The retention policy the store whose archive lies in {@code archiveDir} was last opened for writing with, as
     * {@link #detectConfig} applies it; empty when none was recorded (a store of an earlier build), which leaves the
     * rule that keeps each snapshot unknown.
     */
    public static Optional<RankTreePolicy> recordedRetention(Path archiveDir) {
        if (archiveDir == null) throw new IllegalArgumentException("archiveDir must not be null");
        return RetentionFile.read(new MemoryOverlayIO(), archiveDir);
    }

    /**
     * The recorded policy, or none when its file is damaged: a damaged policy file must not keep every command from
     * the store (verify reports it; the store's next writable open rewrites it), and keeping every snapshot replay
     * would have dropped hides nothing the archive does not still hold.
     */
    private static Optional<RankTreePolicy> recorded(FileIOFactory io, Path archiveDir) {
        try {
            return RetentionFile.read(io, archiveDir);
        } catch (CorruptionException e) {
            return Optional.empty();
        }
    }

    /**
     * Refuses {@code dir} unless it holds a store: an {@link IllegalArgumentException} when it holds no {@code wal} or
     * {@code pages} directory ({@code suffix} added to the message), a {@link StorageException} when this user may not
     * look inside it — the store may well be there, and "holds no store" sent operators looking for one never missing.
     */
    public static void requireStore(Path dir, String suffix) {
        if (dir == null) throw new IllegalArgumentException("dir must not be null");
        if (isDirectory(dir.resolve("wal")) || isDirectory(dir.resolve("pages"))) return;
        throw new IllegalArgumentException(dir + " holds no Varve store (no wal or pages directory)" + suffix);
    }

    private static boolean isDirectory(Path p) {
        try {
            return Files.readAttributes(p, BasicFileAttributes.class).isDirectory();
        } catch (AccessDeniedException e) {
            throw new StorageException("cannot read " + p + ": permission denied, on it or on a directory above it (run as a user who may read the store's files)", p, e);
        } catch (IOException e) {
            return false; // missing, or a path through a file: no store there
        }
    }

    /** {@link #detectConfig(Path)} for a store whose archive lies in {@code archiveDir}. */
    public static VarveConfig detectConfig(Path dir, Path archiveDir) {
        if (dir == null) throw new IllegalArgumentException("dir must not be null");
        if (archiveDir == null) throw new IllegalArgumentException("archiveDir must not be null");
        FileIOFactory io = new MemoryOverlayIO();
        Varve.refuseUnfinishedTransfer(dir);
        requireStore(dir, "");
        VarveConfig.Builder b = VarveConfig.builder().path(dir).archivePath(archiveDir).dataRegionSize(TOOL_REGION_BYTES)
                .checkpointBufferSize(TOOL_BUFFER_BYTES).captureBufferSize(TOOL_BUFFER_BYTES).walSyncMode(WalSyncMode.LOG_ONLY);
        try {
            int pageSize = -1;
            for (Path p : io.list(dir.resolve("pages"), "t")) if (pageSize < 0) pageSize = PageFileCheck.pageSizeOf(io, p);
            if (pageSize > 0) b.pageSize(pageSize);
            long walSegmentSize = WalFileCheck.segmentSizeOfWal(io, dir.resolve("wal"));
            if (walSegmentSize > 0) b.walSegmentSize(walSegmentSize);
            int levels = ArchiveFileCheck.levels(io, archiveDir);
            if (levels > 0) {
                Retention[] keep = new Retention[levels];
                Arrays.fill(keep, Retention.keepAll());
                // the policy the store was last written with, where it was recorded: its rules decide what replay drops
                RankTreePolicy policy = recorded(io, archiveDir).filter(p -> p.levelCount() == levels).orElse(RankTreePolicy.levels(keep));
                b.retention(policy).skippyLevels(ArchiveFileCheck.skippyLevels(io, archiveDir));
                int nodeEntries = ArchiveFileCheck.nodeEntries(io, archiveDir);
                if (nodeEntries > 0) b.skippyNodeEntries(nodeEntries);
                b.archiveSegmentSize(ArchiveFileCheck.segmentBytes(io, archiveDir, b.build().pageSize(), VarveConfig.builder().path(dir).build().archiveSegmentSize()));
            }
        } catch (IOException e) {
            throw new StorageException("cannot read the store's layout: " + e.getMessage(), dir, e);
        }
        return b.build();
    }

    /**
     * Checks every checksum on disk: page files (header, each page's CRC32C and id), WAL segments (header, each
     * record's length, CRC32C and LSN), checkpoint markers and the recovery files a start marker lists, and the
     * archive's Pagelog, Maplog and snapshot logs. Reports each damage found and carries on. Never writes.
     *
     * @throws IllegalArgumentException if the directory holds no store
     */
    public static FileCheck checkFiles(VarveConfig config) {
        if (config == null) throw new IllegalArgumentException("config must not be null");
        requireStore(config.path(), ""); // else no file is no damage: a mistyped path would pass for a sound store
        return checkFiles(config, Recovered.NONE);
    }

    /**
     * {@link #checkFiles(VarveConfig)} of what {@code recovered} reads: the archive tails it cuts are listed in
     * {@link FileCheck#archiveCut} and the torn pages it restores in {@link FileCheck#pagesRestored}, not as damage.
     */
    static FileCheck checkFiles(VarveConfig config, Recovered recovered) {
        return StoreLock.whileShared(config.path(), () -> checkFilesLocked(config, recovered));
    }

    private static FileCheck checkFilesLocked(VarveConfig config, Recovered recovered) {
        FileIOFactory io = new MemoryOverlayIO();
        List<Damage> damage = new ArrayList<>();
        List<Cut> cut = new ArrayList<>();
        List<Restored> restored = new ArrayList<>();
        DamageSink sink = (file, offset, what) -> damage.add(new Damage(file, offset, what));
        Path dir = config.path();
        try (PageStore pages = new PageStore(io, dir.resolve("pages"), config.pageSize())) {
            long pageCount = PageFileCheck.check(pages, io, recovered.pageRestored(), sink,
                    (file, offset, what) -> restored.add(new Restored(file, offset, what)));
            long storeId = checkGenerations(io, dir.resolve("checkpoints"), pages, sink);
            WalFileCheck.Result wal = WalFileCheck.check(io, dir.resolve("wal"), config.walSegmentSize(), config.walSyncMode(), storeId, sink);
            int[] markerCounts = checkMarkers(io, dir.resolve("checkpoints"), config.pageSize(), sink);
            long archived = io.exists(config.archivePath()) ? ArchiveFileCheck.check(io, config.archivePath(), config.pageSize(),
                    recovered.archiveBytesKept(), storeId, sink, (file, from, bytes) -> cut.add(new Cut(file, from, bytes))) : 0;
            return new FileCheck(pageCount, wal.segments(), wal.records(), wal.tornTail(), markerCounts[0], markerCounts[1], archived, cut, restored,
                    damage);
        } catch (IOException e) {
            throw new StorageException("cannot read the store: " + e.getMessage(), dir, e);
        }
    }

    /**
     * The page files against the store id and generations the markers record, as open checks them (a rolled-back or
     * foreign page file is whole, so no page check finds it); damaged markers are reported by {@link #checkMarkers}.
     * Returns the store id the markers hold, which the WAL's segments are checked against too (0: none, or markers
     * too damaged to say).
     */
    private static long checkGenerations(FileIOFactory io, Path checkpointsDir, PageStore pages, DamageSink sink) {
        PageFileGenerations generations;
        try {
            CheckpointMarkers markers = new CheckpointMarkers(io, checkpointsDir);
            generations = PageFileGenerations.load(markers, markers.latestStart().orElse(null));
        } catch (CorruptionException e) {
            return 0;
        }
        generations.check(pages, sink, false); // a damaged header is PageFileCheck's to report
        return generations.durableId();
    }

    /** Checks every marker file and the recovery files of each start marker; returns {markers, recovery files}. */
    private static int[] checkMarkers(FileIOFactory io, Path dir, int pageSize, DamageSink sink) throws IOException {
        CheckpointMarkers markers = new CheckpointMarkers(io, dir);
        int[] counts = new int[2];
        // recovery reads the recovery files of the latest start marker only: an older one without its end marker is a
        // deletion of old markers a crash cut short (the end marker and recovery files go first), not a checkpoint to restore
        long latest = markers.latestStartId();
        for (Path p : io.list(dir, "cp-")) {
            String n = p.getFileName().toString();
            boolean start = CheckpointMarkers.isStart(p);
            if (!start && !n.endsWith("-end.bin")) continue;
            counts[0]++;
            long id = CheckpointMarkers.idOf(p);
            try {
                Optional<CheckpointMarker> m = start ? markers.start(id) : markers.end(id);
                if (start && id == latest && m.isPresent() && m.get().recoveryData() == CheckpointMarker.RECOVERY_FILES && markers.end(id).isEmpty()) {
                    for (int f = 0; f < m.get().fileEntries().length; f++) {
                        counts[1]++;
                        checkRecoveryFile(markers, m.get(), f, pageSize, sink);
                    }
                }
            } catch (CorruptionException e) {
                sink.damage(e.file(), e.offset(), e.what());
            }
        }
        return counts;
    }

    private static void checkRecoveryFile(CheckpointMarkers markers, CheckpointMarker start, int n, int pageSize, DamageSink sink) {
        try {
            RecoveryFileReader.read(markers, start, n, pageSize, (pageId, image) -> {
            });
        } catch (CorruptionException e) {
            sink.damage(e.file(), e.offset(), e.what());
        }
    }

    /**
     * The latest checkpoint's markers as found on disk, or empty when no checkpoint ever started.
     *
     * @throws IllegalArgumentException if the directory holds no store
     */
    public static Optional<CheckpointState> lastCheckpoint(VarveConfig config) {
        if (config == null) throw new IllegalArgumentException("config must not be null");
        requireStore(config.path(), "");
        return StoreLock.whileShared(config.path(), () -> lastCheckpointLocked(config));
    }

    private static Optional<CheckpointState> lastCheckpointLocked(VarveConfig config) {
        FileIOFactory io = new MemoryOverlayIO();
        CheckpointMarkers markers = new CheckpointMarkers(io, config.path().resolve("checkpoints"));
        SortedMap<Long, Integer> files = recoveryFilesLocked(io, config);
        return markers.latestStart().map(s -> new CheckpointState(s.id(), s.markLsn(), s.prevMarkLsn(), markers.end(s.id()).isPresent(),
                s.recoveryData() == CheckpointMarker.RECOVERY_FILES ? "recovery files" : "physical wal", files.getOrDefault(s.id(), 0),
                PageFileGenerations.durableStoreId(markers), s.largestValue()));
    }

    /**
     * The recovery files in the checkpoint directory, counted per checkpoint id (ascending). Besides the latest
     * checkpoint's, a crash can leave files no recovery reads: those of a checkpoint stopped after writing them but
     * before its start marker (they are written first, so that checkpoint has no marker at all), and those whose
     * deletion after an end marker it cut short.
     *
     * @throws IllegalArgumentException if the directory holds no store
     */
    public static SortedMap<Long, Integer> recoveryFilesOnDisk(VarveConfig config) {
        if (config == null) throw new IllegalArgumentException("config must not be null");
        requireStore(config.path(), "");
        return StoreLock.whileShared(config.path(), () -> recoveryFilesLocked(new MemoryOverlayIO(), config));
    }

    private static SortedMap<Long, Integer> recoveryFilesLocked(FileIOFactory io, VarveConfig config) {
        SortedMap<Long, Integer> perCheckpoint = new TreeMap<>();
        try {
            for (Path p : io.list(config.path().resolve("checkpoints"), "cp-")) {
                Matcher m = RECOVERY_FILE.matcher(p.getFileName().toString());
                if (m.matches()) perCheckpoint.merge(Long.parseLong(m.group(1)), 1, Integer::sum);
            }
        } catch (IOException e) {
            throw new StorageException("cannot list the checkpoint directory", config.path().resolve("checkpoints"), e);
        }
        return perCheckpoint;
    }
}
