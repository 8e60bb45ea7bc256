package dev.varve.server;

import dev.varve.config.RecoveryMode;
import dev.varve.core.io.UnforcedFileIOFactory;
import dev.varve.core.page.PageHeader;
import dev.varve.core.page.PageId;
import dev.varve.core.store.PageChecksum;
import dev.varve.engine.SnapshotImage;
import dev.varve.engine.Table;
import dev.varve.engine.Varve;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What the tests of the receiver against a sender that is not a Varve server share: a source store with a snapshot,
 * a {@link FakeSender} speaking the wire format with its real pages, the receiver's target, and checks of how a
 * transfer ended. {@link HostileSenderTest} sends images and targets a Varve server never would, {@link
 * HostileFollowTest} follow streams.
 */
abstract class HostileSenderFixture {
    static final String MODE = RecoveryMode.CHECKPOINT_RECOVERY_FILE.name();

    @TempDir
    Path dir;
    Path target;
    Varve source;
    long snapshot;

    @BeforeEach
    void source() {
        target = dir.resolve("target");
        source = Varve.open(SmallStore.config(dir.resolve("source")).recoveryMode(RecoveryMode.CHECKPOINT_RECOVERY_FILE).build(), UnforcedFileIOFactory.INSTANCE);
        Table t = source.table("t");
        for (int i = 0; i < 2000; i++) t.put(("key-" + i).getBytes(StandardCharsets.UTF_8), new byte[100 + i % 300]);
        snapshot = source.snapshotNow();
    }

    @AfterEach
    void closeSource() {
        source.close();
    }

    SnapshotBackup backup() {
        return new SnapshotBackup(sender.address(), snapshot, target).idleTimeout(Duration.ofSeconds(5));
    }

    FakeSender sender;

    @BeforeEach
    void sender() throws Exception {
        sender = new FakeSender();
    }

    private final List<CompletableFuture<BackupResult>> runs = new ArrayList<>();

    /** Closes the sender, which ends any run still going, and waits until each run ended. */
    @AfterEach
    void closeSender() throws Exception {
        sender.close();
        for (CompletableFuture<BackupResult> run : runs) run.handle((r, e) -> null).get(60, TimeUnit.SECONDS);
    }

    /** A new fake sender and a new target directory {@code name} (in the same temporary directory), for another run. */
    void anew(String name) throws Exception {
        sender.close();
        sender = new FakeSender();
        target = dir.resolve(name);
    }

    /** Starts {@code follow} against the fake sender, ships it the whole image, and waits until the standby is in place. */
    CompletableFuture<BackupResult> followWithImage(SnapshotBackup follow) throws Exception {
        return followWithImage(follow, () -> { });
    }

    /** What the fake sender sends while the standby opens. */
    interface Beat {
        void send() throws Exception;
    }

    /**
     * {@link #followWithImage(SnapshotBackup)}, calling {@code beat} at once after the image's END and every 100 ms
     * until the standby is in place, as a Varve sender sends a HEARTBEAT each second from END on: else the receiver's
     * idle timeout runs through the opening, which took more than 3 s on a loaded VM. At once and that often, not each
     * 500 ms after the image: the opening (a data region of at least the default 256 MiB, zero-filled, and a new WAL)
     * takes the CPU from the test thread that beats, whose first beat then came 1 to 7 s after END (load 12 to 15).
     */
    CompletableFuture<BackupResult> followWithImage(SnapshotBackup follow, Beat beat) throws Exception {
        CountDownLatch imageIn = new CountDownLatch(1);
        CompletableFuture<BackupResult> run = start(follow.progress(new ShipProgress() {
            @Override
            public void received(long pages, long imagePages, long bytes) {
            }

            @Override
            public void imageComplete(BackupResult image) {
                imageIn.countDown();
            }
        }));
        sender.accept();
        assertEquals(ShipProtocol.FOLLOW, sender.helloFlags & ShipProtocol.FOLLOW);
        try (SnapshotImage image = SnapshotImage.open(source, snapshot)) {
            sender.image(image, MODE);
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        do {
            assertTrue(System.nanoTime() < deadline && !run.isDone(), "the image is in place");
            beat.send();
        } while (!imageIn.await(100, TimeUnit.MILLISECONDS));
        return run;
    }

    /**
     * Runs {@code backup} on another thread. The fixture waits for it to end after the test (see {@link #closeSender}):
     * a run a failed test left behind closed its standby while the temporary directory was deleted under it.
     */
    CompletableFuture<BackupResult> start(SnapshotBackup backup) {
        CompletableFuture<BackupResult> run = CompletableFuture.supplyAsync(backup::run);
        runs.add(run);
        return run;
    }

    /** How the run started last ended: its failure's message, or "completed"; waiting for it (its sender hung up). */
    String howTheLastRunEnded() throws Exception {
        if (runs.isEmpty()) return "none started";
        CompletableFuture<BackupResult> run = runs.get(runs.size() - 1);
        return run.handle((r, e) -> e == null ? "completed" : String.valueOf(e.getCause() == null ? e : e.getCause().getMessage()))
                .get(60, TimeUnit.SECONDS);
    }

    /** The failure {@code run} ends with, which must be a {@link BackupException}. */
    static String failure(CompletableFuture<BackupResult> run) throws Exception {
        ExecutionException e = assertThrows(ExecutionException.class, () -> run.get(60, TimeUnit.SECONDS));
        assertInstanceOf(BackupException.class, e.getCause(), () -> "a BackupException, not " + e.getCause());
        return e.getCause().getMessage();
    }

    /**
     * A transfer that failed before any frame of the image was written left nothing: the target it created is gone,
     * and its message says so instead of calling it unfinished.
     */
    void assertRemoved(String failure) {
        assertTrue(failure.contains("nothing of the image was written, so " + target + ", which this backup created, was removed"), failure);
        assertFalse(Files.exists(target), () -> target + " is left behind");
    }

    void assertUnfinished() {
        IllegalStateException refused = assertThrows(IllegalStateException.class,
                () -> Varve.open(SmallStore.config(target).recoveryMode(RecoveryMode.CHECKPOINT_RECOVERY_FILE).build(), UnforcedFileIOFactory.INSTANCE));
        assertTrue(refused.getMessage().contains("unfinished transfer"), refused.getMessage());
    }

    /** A page of {@code image} (its first) re-stamped to claim to be page {@code index} of file {@code fileId}, CRC and all. */
    static ByteBuffer forgedPage(SnapshotImage image, int fileId, int index) {
        ByteBuffer page = ByteBuffer.allocateDirect(image.pageSize());
        image.next(page);
        page.flip();
        page.duplicate().order(ByteOrder.LITTLE_ENDIAN).putLong(PageHeader.PAGE_ID_OFFSET, PageId.of(fileId, index));
        PageChecksum.stamp(page, 0, image.pageSize());
        return page;
    }

    static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
