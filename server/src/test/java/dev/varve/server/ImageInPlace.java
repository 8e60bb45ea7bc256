package dev.varve.server;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/** A follow's progress listener that tells when the image is in place (the standby then applies the sender's changes). */
final class ImageInPlace implements ShipProgress {
    private final CountDownLatch in = new CountDownLatch(1);

    @Override
    public void received(long pages, long imagePages, long bytes) {
    }

    @Override
    public void imageComplete(BackupResult image) {
        in.countDown();
    }

    /** Whether the image is in place within {@code timeout}. */
    boolean await(Duration timeout) throws InterruptedException {
        return in.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
    }
}
