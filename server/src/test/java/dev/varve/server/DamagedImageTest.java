package dev.varve.server;

import dev.varve.config.RecoveryMode;
import dev.varve.engine.SnapshotImage;
import dev.varve.engine.Table;
import dev.varve.engine.Varve;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.UnpooledByteBufAllocator;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A PAGES frame's CRC covers only where its pages go; each page is checked by its own CRC as the receiver writes it.
 * A sender (a raw socket speaking the protocol, with a real snapshot's pages) that sends a page with one byte flipped,
 * or a page put where it does not belong, fails the transfer with the page named, and the target stays unfinished.
 */
class DamagedImageTest {
    @TempDir
    Path dir;

    @ParameterizedTest
    @ValueSource(strings = {"flipped byte", "misplaced page"})
    @Timeout(60)
    void aDamagedPageFailsTheTransferAndTheTargetStaysUnfinished(String damage) throws Exception {
        Path target = dir.resolve("target");
        try (Varve source = Varve.open(ShippingTest.config(dir.resolve("source"), RecoveryMode.CHECKPOINT_RECOVERY_FILE))) {
            Table t = source.table("t");
            for (int i = 0; i < 2000; i++) t.put(("key-" + i).getBytes(), new byte[100 + i % 300]);
            long id = source.snapshotNow();
            try (ServerSocket listener = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
                SnapshotBackup backup = new SnapshotBackup(new InetSocketAddress(InetAddress.getLoopbackAddress(), listener.getLocalPort()), id, target);
                CompletableFuture<BackupResult> run = CompletableFuture.supplyAsync(backup::run);
                try (Socket s = listener.accept(); SnapshotImage image = SnapshotImage.open(source, id)) {
                    s.getInputStream().readNBytes(4 + 4 + 1 + 16 + 4); // magic and HELLO
                    OutputStream out = s.getOutputStream();
                    send(out, header(image));
                    for (SnapshotImage.TableImage table : image.tables()) send(out, table(table));
                    ByteBuffer page = ByteBuffer.allocateDirect(image.pageSize());
                    image.next(page);
                    page.flip();
                    int index = image.index();
                    if (damage.equals("flipped byte")) {
                        page.put(200, (byte) (page.get(200) ^ 0x10));
                    } else { // the file's next page, where its first belongs: the order is right, the page is not
                        page.clear();
                        image.next(page);
                        page.flip();
                    }
                    send(out, pages(image.fileId(), index, page));
                    ExecutionException e = assertThrows(ExecutionException.class, () -> run.get(30, TimeUnit.SECONDS));
                    assertInstanceOf(BackupException.class, e.getCause());
                    String message = e.getCause().getMessage();
                    assertTrue(message.contains(damage.equals("flipped byte") ? "checksum mismatch" : "carries page id"), message);
                    assertTrue(message.contains("t00000-p00000.page"), "names the file: " + message);
                }
            }
        }
        IllegalStateException refused = assertThrows(IllegalStateException.class,
                () -> Varve.open(SmallStore.config(target).recoveryMode(RecoveryMode.CHECKPOINT_RECOVERY_FILE).build()));
        assertTrue(refused.getMessage().contains("unfinished transfer"), refused.getMessage());
    }

    private static ByteBuf header(SnapshotImage image) {
        ByteBuf h = Frame.start(UnpooledByteBufAllocator.DEFAULT, ShipProtocol.HEADER, 64);
        h.writeLong(image.snapshot()).writeInt(1).writeLong(0).writeInt(image.pageSize()).writeInt(4);
        Frame.writeString(h, RecoveryMode.CHECKPOINT_RECOVERY_FILE.name());
        h.writeLong(image.pageCount());
        return Frame.finish(h);
    }

    private static ByteBuf table(SnapshotImage.TableImage t) {
        ByteBuf f = Frame.start(UnpooledByteBufAllocator.DEFAULT, ShipProtocol.TABLE, 64);
        Frame.writeString(f, t.name());
        ShipProtocol.writeOptions(f, t.options());
        f.writeLong(t.entries());
        return Frame.finish(f);
    }

    private static ByteBuf pages(int fileId, int index, ByteBuffer page) {
        ByteBuf f = Frame.start(UnpooledByteBufAllocator.DEFAULT, ShipProtocol.PAGES, 12 + page.remaining());
        f.writeInt(fileId).writeInt(index).writeInt(1).writeBytes(page);
        return Frame.finish(f);
    }

    private static void send(OutputStream out, ByteBuf frame) throws IOException {
        try {
            byte[] bytes = new byte[frame.readableBytes()];
            frame.readBytes(bytes);
            out.write(bytes);
            out.flush();
        } finally {
            frame.release();
        }
    }
}
