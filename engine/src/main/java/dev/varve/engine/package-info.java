/**
 * The store as an application sees it: {@link dev.varve.engine.Varve} (open, tables, atomic writes, snapshots,
 * checkpoints, metrics), {@link dev.varve.engine.Table} and {@link dev.varve.engine.Cursor}, as-of
 * {@link dev.varve.engine.SnapshotView}s, the change feed, and the inspection tools ({@code StoreInspector},
 * {@code StoreVerifier}, {@code StoreSalvager}, {@code WalInspector}) the command-line tool and the server build on.
 * {@code Engine} wires page store, page memory, WAL, checkpointer, snapshot archive and recovery together;
 * {@code WritePath} is the one write path.
 *
 * <h2>Global lock order</h2>
 * Every thread takes the store's locks in this order, outermost first, and never one further up while holding one
 * further down. Each lock is documented where it lives; this is the one place that ranks them all.
 * <ol>
 *   <li><b>Checkpoint run lock</b> ({@code Checkpointer.running}): one checkpoint at a time; taken only by the
 *       thread running a checkpoint, before anything else.</li>
 *   <li><b>Catalog monitor</b> ({@code Engine.catalogLock}): table creation, held around the create's logged write,
 *       and around the whole write of a batch that creates the tables it names.</li>
 *   <li><b>Checkpoint lock</b> ({@code Engine.checkpointLock}): a writer holds the read lock for the whole
 *       append-and-apply of one operation; the checkpoint's mark, snapshot declaration, ranking and close take the
 *       write lock, for microseconds. The mark's listener (the archive's {@code onMark}) runs under it. A
 *       {@code writeAndSnapshot} holds the write lock instead of the read lock across its batch's append-and-apply
 *       and the declaration after it (the partition locks are released before the declaration). It is a
 *       {@link java.util.concurrent.locks.StampedLock}'s views ({@code CheckpointLock}), not a
 *       {@code ReentrantReadWriteLock}: every put takes its read side, and the reentrant lock's per-thread hold counts
 *       (a thread-local lookup once two threads read) cost two writers 6-15% of their puts. A thread asking for the
 *       write side goes before readers that arrive after it (a bare {@code StampedLock} lets them in, and two writers
 *       kept a mark waiting for tens of milliseconds). It is not reentrant: nothing under either side takes it
 *       again.</li>
 *   <li><b>Partition locks</b> ({@code PartitionHandle.lock}): a writer takes the write locks of every partition its
 *       operation touches in file-id order; readers take one read lock.</li>
 *   <li><b>Page latches</b> ({@code Frame}): taken under the partition lock by the B+tree. Only a writer holding its
 *       partition's write lock holds several at once (a split: up to three), so their order among themselves cannot
 *       deadlock; the checkpointer reads pages under a read latch one at a time, holding nothing above but the run
 *       lock. A writer that finds the checkpoint buffer full waits with its latch released.</li>
 *   <li><b>WAL locks</b> ({@code Wal}): the append lock, then the force lock. A logical record is appended before
 *       the page changes, holding no latch; in {@code WAL_PHYSICAL} mode the page-image hook appends while it holds
 *       the page's write latch, which is why the WAL ranks below the latches. A commit's fsync waits for the force
 *       lock after the partition and checkpoint locks were released.</li>
 *   <li><b>Archive append gate</b> ({@code ArchiveLock}, snapshot module): the archiver, a declaration or rank
 *       change, a drop lookup and an opening view take it before the archive lock; the checkpoint's archive flush
 *       and reclamation hold it alone while they fsync the archive. The capture hook never takes it. (In invoked
 *       mode a capture that finds its buffer full steps the archiver, and so takes it under a page latch.) A rank
 *       change appends its WAL record holding it, so that no drop comes between finding the snapshot live and
 *       raising it, and a drop's write forces the WAL holding it: the WAL's locks are taken under the gate, never
 *       the gate under them.</li>
 *   <li><b>Archive lock</b> ({@code ArchiveLock}'s state lock): the capture hook takes it under the page's write
 *       latch; the archiver, the checkpoint's archive flush and the as-of views take it holding no latch. Held
 *       for memory work only, never across an fsync.</li>
 *   <li><b>File monitors</b>: the synchronized methods of {@code Pagelog}, {@code MaplogFile} and
 *       {@code ArchivedPageCache}, and the page table's stripe monitors in page memory. Innermost: nothing is locked
 *       while one is held.</li>
 * </ol>
 * {@link dev.varve.engine.ChangeListener}s are called inside the write path, under the checkpoint lock and the
 * partition locks (a snapshot's declaration under the checkpoint write lock): a listener's own lock ranks with the
 * file monitors, innermost, and a listener must not call back into the store.
 * Waits without a lock: the archiver and checkpoint-trigger agents ({@code dev.varve.core.agent}) are woken, never
 * locked, and a checkpoint waiting for the archiver holds only the run lock.
 */
package dev.varve.engine;
