// The README tour's sample API: a tiny pet store on 127.0.0.1 that wants an API key (X-Api-Key: demo-key)
// and describes itself at /openapi.json. Run it with `node docs/tour/pets.mjs` (PORT, default 4010).
// Plain Node and no dependencies, so it runs in a fresh clone before `npm install` is done.
import { createServer } from "node:http"

const port = Number(process.env.PORT ?? 4010)
const API_KEY = "demo-key"
const pets = [{ id: "1", name: "Rex", tag: "dog" }, { id: "2", name: "Tom", tag: "cat" }]

const document = {
  openapi: "3.0.3",
  info: { title: "Pet Store", version: "1.0", description: "The Switchyard tour's sample API." },
  servers: [{ url: `http://127.0.0.1:${port}` }],
  security: [{ apiKey: [] }],
  components: {
    securitySchemes: { apiKey: { type: "apiKey", in: "header", name: "X-Api-Key" } },
    schemas: {
      NewPet: {
        type: "object",
        required: ["name"],
        properties: { name: { type: "string", minLength: 1 }, tag: { type: "string" } }
      }
    }
  },
  paths: {
    "/pets": {
      get: {
        operationId: "listPets",
        summary: "List pets",
        parameters: [{ name: "limit", in: "query", schema: { type: "integer", minimum: 1, maximum: 100 } }],
        responses: { "200": { description: "The pets" } }
      },
      post: {
        operationId: "createPet",
        summary: "Add a pet",
        requestBody: {
          required: true,
          content: { "application/json": { schema: { $ref: "#/components/schemas/NewPet" } } }
        },
        responses: { "201": { description: "The new pet" } }
      }
    },
    "/pets/{petId}": {
      get: {
        operationId: "getPet",
        summary: "Get a pet",
        parameters: [{ name: "petId", in: "path", required: true, schema: { type: "string" } }],
        responses: { "200": { description: "The pet" }, "404": { description: "No such pet" } }
      }
    }
  }
}

const send = (response, status, body) => {
  response.writeHead(status, { "content-type": "application/json" })
  // a final newline, so that answers printed in a terminal end their line
  response.end(`${JSON.stringify(body)}\n`)
}

const server = createServer((request, response) => {
  const chunks = []
  request.on("data", (chunk) => chunks.push(chunk))
  request.on("end", () => {
    const url = new URL(request.url ?? "/", "http://pets")
    if (request.method === "GET" && url.pathname === "/openapi.json") return send(response, 200, document)
    if (request.headers["x-api-key"] !== API_KEY) return send(response, 401, { message: "Send X-Api-Key." })
    if (url.pathname === "/pets" && request.method === "GET") {
      return send(response, 200, pets.slice(0, Number(url.searchParams.get("limit") ?? pets.length)))
    }
    if (url.pathname === "/pets" && request.method === "POST") {
      let input
      try {
        input = JSON.parse(Buffer.concat(chunks).toString("utf8"))
      } catch {
        return send(response, 400, { message: "Send the pet as JSON." })
      }
      const pet = { id: String(pets.length + 1), name: String(input.name), tag: String(input.tag ?? "") }
      pets.push(pet)
      return send(response, 201, pet)
    }
    const one = /^\/pets\/([^/]+)$/.exec(url.pathname)
    if (one !== null && request.method === "GET") {
      const pet = pets.find((p) => p.id === decodeURIComponent(one[1]))
      return pet === undefined ? send(response, 404, { message: "No such pet." }) : send(response, 200, pet)
    }
    send(response, 404, { message: "Not found." })
  })
})

server.listen(port, "127.0.0.1", () => console.log(`Pet store on http://127.0.0.1:${port}`))
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => server.close(() => process.exit(0)))
