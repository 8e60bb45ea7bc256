/**
 * Split snapshots (Retro) with rank-segregated retention (Thresher). {@link dev.varve.snapshot.SnapshotArchive}
 * coordinates: {@code Capture} copies a page's pre-state on its first change after a snapshot, the {@code Archiver}
 * agent writes captures to the levels' {@code Pagelog} volumes and their mappings to the {@code Maplog}s
 * ({@code MaplogFile} with {@code Skippy} levels), {@code SnapshotLog}/{@code SnapshotRegistry} hold declarations
 * and Start(v), {@code ArchiveMarks} records what each checkpoint made durable, {@code RankTree},
 * {@code RankedExtent} and {@code MoveLog} keep ranked snapshots across levels, and {@code SnapshotPageTable} with
 * {@link dev.varve.snapshot.AsOfPages} serve as-of reads.
 *
 * <p>Each on-disk format is drawn, offset by offset, in its descriptor — {@code PagelogDescriptor},
 * {@code MaplogDescriptor} (with the kinds of log that share it), {@code SnapshotLogDescriptor},
 * {@code RankedExtentDescriptor}, {@code ArchiveMarksDescriptor} — and every value that packs a level and an address
 * into a long is {@code ArchiveEncoding}'s; the classes that read and write the files use their named constants.
 *
 * <p>Locks, in the global order (see {@code dev.varve.engine}): the archive lock ({@code SnapshotArchive.lock})
 * ranks below the page latches — the capture hook takes it while the changed page is write-latched — and below the
 * checkpoint lock, under whose write lock the mark is noted. The file monitors of {@code Pagelog},
 * {@code MaplogFile} and {@code ArchivedPageCache} are innermost: taken under the archive lock or alone, never
 * around it. Waiting for the archiver (a full capture buffer, the checkpoint's flush) holds no archive lock.
 */
package dev.varve.snapshot;
