package dev.varve.server;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.concurrent.locks.LockSupport;

/**
 * Child-JVM receiver for the kill tests: runs a {@link SnapshotBackup} and prints what the parent waits for:
 * {@code received <bytes>} once 8 MiB of the image arrived (and with a fourth argument {@code hold} applies nothing
 * more until it is killed: the kill lands mid-transfer however slowly the parent gets to it), {@code complete <snapshot>} when the backup is done,
 * and in follow mode {@code image <snapshot>} once the image is in and {@code standby holds sender snapshot <id>} for each sender snapshot the standby received (it
 * follows until killed). Exits 1 with the reason when the backup fails.
 * Arguments: port, snapshot id or {@code follow}, target directory[, hold].
 */
public final class ReceiverFixture {
    private static final long REPORT_AFTER_BYTES = 8L << 20;

    private ReceiverFixture() {
    }

    public static void main(String[] args) {
        boolean follow = args[1].equals("follow");
        boolean hold = args.length > 3 && args[3].equals("hold");
        SnapshotBackup backup = new SnapshotBackup(new InetSocketAddress("127.0.0.1", Integer.parseInt(args[0])), follow ? 1 : Long.parseLong(args[1]),
                Path.of(args[2])).follow(follow).progress(new ShipProgress() {
                    private boolean reported;
                    private long latest;

                    @Override
                    public void received(long pages, long imagePages, long bytes) {
                        if (reported || bytes < REPORT_AFTER_BYTES) return;
                        reported = true;
                        print("received " + bytes);
                        // on the applier's thread: with 22 MiB of the image to go, a parent slowed by a loaded VM killed a
                        // receiver that had already completed
                        while (hold) LockSupport.park();
                    }

                    @Override
                    public void imageComplete(BackupResult image) {
                        print("image " + image.snapshotId());
                    }

                    @Override
                    public void followed(long writesApplied, long latestSenderSnapshot) {
                        if (latestSenderSnapshot == latest) return;
                        latest = latestSenderSnapshot;
                        print("standby holds sender snapshot " + latestSenderSnapshot);
                    }
                });
        try {
            print("complete " + backup.run().snapshotId());
        } catch (BackupException e) {
            print("failed: " + e.getMessage());
            System.exit(1);
        }
    }

    private static void print(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
