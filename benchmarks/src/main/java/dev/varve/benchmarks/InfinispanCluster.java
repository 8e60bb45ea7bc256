package dev.varve.benchmarks;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Three {@link InfinispanNode} child JVMs on loopback, one store kind, each node in {@code BASE/<name>}. Commands go
 * to a node's stdin and its {@code @@} answer comes back from its stdout; its log goes to {@code BASE/<name>.log}.
 * Every node is started at once, as a restarted cluster would be.
 */
final class InfinispanCluster implements AutoCloseable {
    static final int NODES = 3;
    /**
     * Extra JVM arguments for every node, separated by spaces, {@code {node}} standing for the store and node name; for
     * profiling the nodes, e.g. {@code -Dvarve.bench.nodeJvmArgs=-XX:StartFlightRecording=filename=/tmp/{node}.jfr}.
     */
    static final String NODE_JVM_ARGS = "varve.bench.nodeJvmArgs";
    private static final long START_SECONDS = 600;

    private final List<Node> nodes = new ArrayList<>();

    private InfinispanCluster() {
    }

    /** Node {@code i}'s directory under {@code base}: its global state, and its store in {@code store/}. */
    static Path nodeDir(Path base, int i) {
        return base.resolve("node" + i);
    }

    /** Starts the three nodes of {@code store} on {@code ports}, all at once, and waits until each has its cache running. */
    static InfinispanCluster start(InfinispanComparison.Store store, Path base, int[] ports) throws Exception {
        StringBuilder hosts = new StringBuilder();
        for (int p : ports) hosts.append(hosts.length() == 0 ? "" : ",").append("127.0.0.1[").append(p).append(']');
        InfinispanCluster c = new InfinispanCluster();
        try {
            for (int i = 0; i < NODES; i++) {
                Path dir = nodeDir(base, i);
                Files.createDirectories(dir);
                List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx1g",
                        "-Djava.net.preferIPv4Stack=true", "-Dvarve.bench.port=" + ports[i], "-Dvarve.bench.hosts=" + hosts,
                        "-D" + Main.LOG_LEVEL_PROPERTY + "=warn"));
                cmd.addAll(ChildJvmArgs.fromProperty(NODE_JVM_ARGS, "{node}", store.name().toLowerCase(Locale.ROOT) + "-node" + i));
                cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), InfinispanNode.class.getName(), store.name(), "node" + i, dir.toString()));
                Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.appendTo(base.resolve("node" + i + ".log").toFile())).start();
                c.nodes.add(new Node("node" + i, p));
            }
            for (Node n : c.nodes) n.started = Long.parseLong(n.await("start", START_SECONDS).substring("started ".length()));
            return c;
        } catch (Exception | AssertionError e) {
            c.close();
            throw e;
        }
    }

    /** The slowest node's start, in milliseconds. */
    long startMillis() {
        return nodes.stream().mapToLong(n -> n.started).max().orElseThrow();
    }

    /**
     * Waits until every node sees all three members, no rebalance in progress, and can read: a node's cache may run
     * while the cluster still restores its previous topology, and reads fail until every member is back.
     */
    void awaitStable() throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(START_SECONDS);
        for (Node n : nodes) {
            while (!n.ask("topology", 60).equals(NODES + " true") || !readable(n)) {
                if (System.nanoTime() > deadline) throw new IllegalStateException(n.name + " never saw a stable topology of " + NODES + " members");
                Thread.sleep(200);
            }
        }
    }

    private static boolean readable(Node n) throws InterruptedException {
        try {
            return n.ask("probe", 60).equals("ok");
        } catch (IllegalStateException e) {
            return false;
        }
    }

    /** Sends {@code commands[i]} to node {@code i}, all at once, and answers their answers in node order. */
    String[] askAll(String[] commands, long timeoutSeconds) throws Exception {
        List<CompletableFuture<String>> f = new ArrayList<>();
        for (int i = 0; i < NODES; i++) {
            Node n = nodes.get(i);
            String c = commands[i];
            f.add(CompletableFuture.supplyAsync(() -> {
                try {
                    return n.ask(c, timeoutSeconds);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException(n.name + ": interrupted", e);
                }
            }));
        }
        String[] out = new String[NODES];
        for (int i = 0; i < NODES; i++) out[i] = f.get(i).get();
        return out;
    }

    /**
     * A clean stop of the whole cluster: Infinispan's cluster-wide cache shutdown (each node writes its topology to
     * its global state), then every cache manager stops and every JVM exits.
     */
    void shutdown() throws Exception {
        nodes.get(0).ask("shutdown", START_SECONDS);
        askAll(new String[]{"exit", "exit", "exit"}, START_SECONDS);
        for (Node n : nodes) {
            if (!n.process.waitFor(60, TimeUnit.SECONDS)) throw new IllegalStateException(n.name + " did not exit after a clean stop");
        }
    }

    /** Kills whatever node is still running (after a failure); an interrupt stops the waiting, not the killing. */
    @Override
    public void close() {
        boolean interrupted = false;
        for (Node n : nodes) {
            if (!n.process.isAlive()) continue;
            n.process.destroyForcibly();
            try {
                if (!interrupted) n.process.waitFor(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) Thread.currentThread().interrupt();
    }

    /**
     * Three free loopback ports, and the three 100 above them (JGroups FD_SOCK2), all below the kernel's ephemeral range:
     * the cluster restarts on the same ports, and a port from the ephemeral range could meanwhile be handed to some
     * outgoing connection.
     */
    static int[] freePorts() throws IOException {
        int ephemeralLow = 32768;
        Path range = Path.of("/proc/sys/net/ipv4/ip_local_port_range");
        if (Files.isReadable(range)) ephemeralLow = Integer.parseInt(Files.readAllLines(range).get(0).trim().split("\\s+")[0]);
        SplittableRandom rnd = new SplittableRandom();
        for (int tries = 0; tries < 1000; tries++) {
            int base = 10_000 + rnd.nextInt(Math.max(1, ephemeralLow - 10_200));
            int[] ports = {base, base + 1, base + 2};
            boolean free = true;
            for (int p : ports) free &= bindable(p) && bindable(p + 100);
            if (free) return ports;
        }
        throw new IOException("no three free loopback ports below " + ephemeralLow);
    }

    private static boolean bindable(int port) {
        try (ServerSocket s = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
            return s.isBound();
        } catch (IOException e) {
            return false;
        }
    }

    /** One child JVM and its answers. */
    private static final class Node {
        final String name;
        final Process process;
        final PrintWriter commands;
        final BlockingQueue<String> answers = new ArrayBlockingQueue<>(16);
        long started;

        Node(String name, Process process) {
            this.name = name;
            this.process = process;
            this.commands = new PrintWriter(process.getOutputStream(), true, StandardCharsets.UTF_8);
            Thread reader = new Thread(() -> {
                try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                    for (String line; (line = r.readLine()) != null; ) if (line.startsWith("@@")) answers.put(line);
                } catch (IOException | InterruptedException e) {
                    // the node died: its caller times out and reports it
                }
            }, "answers-" + name);
            reader.setDaemon(true);
            reader.start();
        }

        String ask(String command, long timeoutSeconds) throws InterruptedException {
            commands.println(command);
            return await(command, timeoutSeconds);
        }

        String await(String what, long timeoutSeconds) throws InterruptedException {
            String a = null;
            for (long waited = 0; a == null && waited < timeoutSeconds && process.isAlive(); waited++) a = answers.poll(1, TimeUnit.SECONDS);
            if (a == null) a = answers.poll(); // it may have answered just before it exited
            if (a == null) throw new IllegalStateException(name + ": no answer to '" + what + "' " + (process.isAlive()
                    ? "within " + timeoutSeconds + " s" : "(it exited with " + process.exitValue() + "; see its log)"));
            if (a.startsWith("@@ERR")) throw new IllegalStateException(name + ": '" + what + "' failed: " + a.substring(2));
            return a.substring(3);
        }
    }
}
