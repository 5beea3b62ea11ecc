/*
 * A local Neo4j 5 Community server for tests and the demo, without Docker.
 *
 * Run with the jars that pom.xml fetches:
 *   java -cp 'tools/neo4j-local/lib/*' tools/neo4j-local/Neo4jLocal.java --port 7687 --data DIR [--password PW]
 *       [--page-cache 256m] [--tx-memory 1g] [--min-replan-interval SECONDS]
 *
 * It embeds the database (DatabaseManagementServiceBuilder) and opens Bolt on 127.0.0.1:PORT
 * (--port 0: a free port the kernel picks), prints "NEO4J READY bolt://127.0.0.1:PORT" with the
 * port it listens on once Bolt answers, and shuts the database down
 * cleanly on SIGTERM/SIGINT (a JVM shutdown hook), so the store files stay consistent.
 * A SIGKILL is a crash: Neo4j recovers from its transaction log on the next start.
 */

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;

import org.neo4j.configuration.GraphDatabaseInternalSettings;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.BoltConnectorInternalSettings;
import org.neo4j.configuration.connectors.ConnectorPortRegister;
import org.neo4j.configuration.connectors.ConnectorType;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.kernel.internal.GraphDatabaseAPI;

public final class Neo4jLocal {
    /** The data directory may already hold this password (a restart): that is not an error. */
    private static void setPassword(DatabaseManagementService dbms, String password) {
        GraphDatabaseService system = dbms.database(GraphDatabaseSettings.SYSTEM_DATABASE_NAME);
        try {
            // Parameters only: the password never becomes query text.
            system.executeTransactionally(
                    "ALTER USER neo4j SET PASSWORD $pw CHANGE NOT REQUIRED", java.util.Map.of("pw", password));
        } catch (org.neo4j.graphdb.QueryExecutionException e) {
            if (e.getMessage() == null || !e.getMessage().contains("cannot be the same")) {
                throw e;
            }
        }
    }

    public static void main(String[] args) throws Exception {
        int port = 7687;
        Path data = null;
        String password = null;
        String pageCache = "256m";
        String txMemory = "1g";
        Duration minReplanInterval = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--port" -> port = Integer.parseInt(args[++i]);
                case "--data" -> data = Path.of(args[++i]);
                case "--password" -> password = args[++i];
                case "--page-cache" -> pageCache = args[++i];
                case "--tx-memory" -> txMemory = args[++i];
                case "--min-replan-interval" -> minReplanInterval = Duration.ofSeconds(Long.parseLong(args[++i]));
                default -> {
                    System.err.println("usage: Neo4jLocal --port N --data DIR [--password PW] [--page-cache 256m] [--tx-memory 1g]"
                            + " [--min-replan-interval SECONDS]");
                    System.exit(2);
                }
            }
        }
        if (data == null) {
            System.err.println("Neo4jLocal: --data DIR is required");
            System.exit(2);
        }
        Files.createDirectories(data);
        boolean auth = password != null && !password.isEmpty();

        DatabaseManagementServiceBuilder builder = new DatabaseManagementServiceBuilder(data.toAbsolutePath());
        // How long a cached plan is kept before the statistics it was planned on are checked again
        // (Neo4j's default: 10 s). The tests' server replaces its whole graph before every test, so
        // the statistics always diverge and each statement was planned again every 10 s: over half
        // of that server's CPU (LocalNeo4j.min_replan_interval_s says what the tests set).
        if (minReplanInterval != null) {
            builder.setConfig(GraphDatabaseSettings.cypher_min_replan_interval, minReplanInterval);
        }
        DatabaseManagementService dbms = builder
                .setConfig(BoltConnector.enabled, true)
                .setConfig(BoltConnector.listen_address, new SocketAddress("127.0.0.1", port))
                .setConfig(HttpConnector.enabled, false)
                .setConfig(GraphDatabaseSettings.auth_enabled, auth)
                .setConfig(GraphDatabaseSettings.pagecache_memory, org.neo4j.io.ByteUnit.parse(pageCache))
                .setConfig(GraphDatabaseSettings.memory_transaction_global_max_size, org.neo4j.io.ByteUnit.parse(txMemory))
                .setConfig(GraphDatabaseSettings.transaction_timeout, Duration.ofSeconds(120))
                // A clean stop took 12 s, 10 of them Bolt's default waits (Netty's 5 s quiet period
                // and the thread pool's 5 s) with no client left: stop in about 1 s. Clients still
                // connected are cut after 1 s instead of 5, which a local server can afford.
                .setConfig(GraphDatabaseInternalSettings.netty_server_shutdown_quiet_period, 0)
                .setConfig(GraphDatabaseInternalSettings.netty_server_shutdown_timeout, Duration.ofSeconds(1))
                .setConfig(BoltConnectorInternalSettings.thread_pool_shutdown_wait_time, Duration.ofSeconds(1))
                .setConfig(BoltConnectorInternalSettings.connection_shutdown_wait_time, Duration.ofSeconds(1))
                .build();

        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.out.println("NEO4J STOPPING");
            System.out.flush();
            dbms.shutdown();
            stopped.countDown();
        }, "neo4j-local-shutdown"));

        try {
            if (auth) {
                setPassword(dbms, password);
            }
            GraphDatabaseService db = dbms.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME);
            db.executeTransactionally("RETURN 1");
            port = boundBoltPort(db);
        } catch (RuntimeException e) {
            System.err.println("NEO4J FAILED " + e.getMessage());
            System.exit(1);
        }
        System.out.println("NEO4J READY bolt://127.0.0.1:" + port);
        System.out.flush();
        stopped.await();
    }

    /** The port Bolt listens on: the kernel's choice for --port 0. Why 0: a port found free
     * beforehand can be taken by another process before the server binds it. */
    static int boundBoltPort(GraphDatabaseService db) {
        return ((GraphDatabaseAPI) db).getDependencyResolver()
                .resolveDependency(ConnectorPortRegister.class)
                .getLocalAddress(ConnectorType.BOLT)
                .getPort();
    }
}
