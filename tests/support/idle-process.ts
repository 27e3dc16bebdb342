// A child process that only says it is ready and then waits: the leak the fixture self-test makes.
console.log(JSON.stringify({ event: "idle.ready" }));
setInterval(() => {}, 60_000);
