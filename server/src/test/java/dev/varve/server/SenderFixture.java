package dev.varve.server;

import dev.varve.config.RecoveryMode;
import dev.varve.core.io.UnforcedFileIOFactory;
import dev.varve.engine.Varve;

import java.net.InetSocketAddress;
import java.nio.file.Path;

/**
 * Child-JVM sender for the kill tests: writes {@code steps} steps of a seeded {@link Workload}, declares a rank-2
 * snapshot, serves the store on a free loopback port, prints {@code READY <port> <snapshot>}, and then writes on,
 * 50 steps every 50 ms, until it is killed: a writer never idle for long, which at full speed took a core of the
 * two the CI VM has for the whole test. With a sixth argument {@code follow} the server allows writes (follow mode),
 * and the writer declares a snapshot after each 50 steps, printing {@code SNAPSHOT <id> <steps so far>} so the parent
 * can rebuild its model, at a pace a standby keeps up with.
 * Arguments: store directory, recovery mode, seed, keys, steps[, follow].
 */
public final class SenderFixture {
    private SenderFixture() {
    }

    public static void main(String[] args) throws InterruptedException {
        Path dir = Path.of(args[0]);
        RecoveryMode mode = RecoveryMode.valueOf(args[1]);
        Workload w = new Workload(Long.parseLong(args[2]), Integer.parseInt(args[3]), false); // the parent rebuilds the model
        long steps = Long.parseLong(args[4]);
        boolean follow = args.length > 5 && args[5].equals("follow");
        Varve store = Varve.open(ShippingTest.config(dir, mode), UnforcedFileIOFactory.INSTANCE);
        w.createTables(store);
        for (long i = 0; i < steps; i++) w.step(store);
        long snapshot = store.snapshotNow(2);
        VarveServer server = VarveServer.start(store, new InetSocketAddress("127.0.0.1", 0), new ServerOptions().allowWrites(follow));
        System.out.println("READY " + server.address().getPort() + " " + snapshot);
        System.out.flush();
        while (true) { // until kill -9
            for (int i = 0; i < 50; i++) w.step(store);
            if (follow) {
                long id = store.snapshotNow();
                System.out.println("SNAPSHOT " + id + " " + w.steps());
                System.out.flush();
            }
            Thread.sleep(50);
        }
    }
}
