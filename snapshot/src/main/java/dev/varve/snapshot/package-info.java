/**
 * Split snapshots (Retro) with rank-segregated retention (Thresher). {@link dev.varve.snapshot.SnapshotArchive}
 * opens the archive and coordinates its roles: {@code Capture} (the page hook) and {@code CapturePath} copy and
 * number a page's pre-state on its first change after a snapshot; {@code PendingCaptures} holds them until the
 * {@code Archiver} agent writes them to the levels' {@code Pagelog} volumes and their mappings to the
 * {@code Maplog}s ({@code MaplogFile} with {@code Skippy} levels); {@code CheckpointFlush} makes each checkpoint's
 * share durable and {@code ArchiveMarks} records it; {@code ArchiveRecovery} cuts back to the recovered mark;
 * {@code SnapshotLog}/{@code SnapshotRegistry} hold declarations and Start(v), and {@code RetentionEnforcer} the
 * policy's rules and budget; {@code RankTree}, {@code LazyRanker}, {@code RankedExtent}(s) and {@code MoveLog} keep
 * ranked snapshots across levels; {@code Reclaimer} gives space back (checked by {@code ReclamationCheck}); and
 * {@code OpenViews}' {@code SnapshotPageTable}s with {@link dev.varve.snapshot.AsOfPages} serve as-of reads.
 *
 * <p>Each on-disk format is drawn, offset by offset, in its descriptor — {@code PagelogDescriptor},
 * {@code MaplogDescriptor} (with the kinds of log that share it), {@code SnapshotLogDescriptor},
 * {@code RankedExtentDescriptor}, {@code ArchiveMarksDescriptor} — and every value that packs a level and an address
 * into a long is {@code ArchiveEncoding}'s; the classes that read and write the files use their named constants.
 *
 * <p>Locks, in the global order (see {@code dev.varve.engine}): the archive's append gate, then its state lock
 * ({@code ArchiveLock}). The state lock ranks below the page latches — the capture hook takes it while the changed
 * page is write-latched — and below the checkpoint lock, under whose write lock the mark is noted; it is held for
 * memory work only, never across an fsync. The gate is taken before the state lock by whoever appends to or reads
 * an archive log under it (the archiver, declarations, rank changes, drops, a view catching up), and alone by the
 * checkpoint's flush and reclamation while they fsync; capture never takes it. The file monitors of
 * {@code Pagelog}, {@code MaplogFile} and {@code ArchivedPageCache} are innermost: taken under the archive's locks
 * or alone, never around them. Waiting for the archiver (a full capture buffer, the checkpoint's flush) holds
 * neither archive lock.
 */
package dev.varve.snapshot;
