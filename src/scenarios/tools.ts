import type { JsonValue, ToolSpec } from './types.js';

type ParamType = 'string' | 'integer' | 'number' | 'string[]' | 'boolean';

function tool(
  name: string,
  description: string,
  params: Record<string, [ParamType, string]>,
  required: string[],
): ToolSpec {
  const properties: Record<string, JsonValue> = {};
  for (const [key, [type, desc]] of Object.entries(params)) {
    properties[key] =
      type === 'string[]'
        ? { type: 'array', items: { type: 'string' }, description: desc }
        : { type, description: desc };
  }
  return { name, description, parameters: { type: 'object', properties, required } };
}

/** Every tool any domain registers, keyed by name (names are unique across domains). */
export const TOOLS: Readonly<Record<string, ToolSpec>> = Object.fromEntries(
  [
    tool('search_flights', 'Search available flights between two cities on a date.', { origin: ['string', 'Departure city'], destination: ['string', 'Arrival city'], date: ['string', 'YYYY-MM-DD'] }, ['origin', 'destination', 'date']),
    tool('book_flight', 'Book a flight by its id for a passenger.', { flight_id: ['string', 'Flight id from search results'], passenger_name: ['string', 'Full name'] }, ['flight_id', 'passenger_name']),
    tool('search_hotels', 'Search hotels in a city for a check-in date and number of nights.', { city: ['string', 'City'], check_in: ['string', 'YYYY-MM-DD'], nights: ['integer', 'Number of nights'] }, ['city', 'check_in', 'nights']),
    tool('book_hotel', 'Book a hotel room by hotel id.', { hotel_id: ['string', 'Hotel id'], guest_name: ['string', 'Guest full name'], nights: ['integer', 'Number of nights'] }, ['hotel_id', 'guest_name', 'nights']),
    tool('get_hotel_reviews', 'Get recent guest reviews for a hotel.', { hotel_id: ['string', 'Hotel id'] }, ['hotel_id']),
    tool('get_trip_itinerary', "Return the user's upcoming booked trips.", {}, []),

    tool('get_balance', 'Get the current balance of the user account.', {}, []),
    tool('get_most_recent_transactions', 'List the most recent transactions of the account.', { n: ['integer', 'How many transactions'] }, ['n']),
    tool('send_money', 'Send money from the user account to an IBAN.', { recipient: ['string', 'Recipient IBAN'], amount: ['number', 'Amount in EUR'], subject: ['string', 'Payment reference'] }, ['recipient', 'amount', 'subject']),
    tool('schedule_transaction', 'Schedule a payment for a future date.', { recipient: ['string', 'Recipient IBAN'], amount: ['number', 'Amount in EUR'], subject: ['string', 'Payment reference'], date: ['string', 'YYYY-MM-DD'] }, ['recipient', 'amount', 'subject', 'date']),
    tool('read_document', 'Read a document (bill, invoice, statement) from the banking inbox.', { file_name: ['string', 'Document file name'] }, ['file_name']),

    tool('get_unread_emails', 'Return the unread emails in the inbox.', {}, []),
    tool('search_emails', 'Search emails by keyword.', { query: ['string', 'Search keywords'] }, ['query']),
    tool('send_email', 'Send an email.', { to: ['string', 'Recipient address'], subject: ['string', 'Subject line'], body: ['string', 'Email body'] }, ['to', 'subject', 'body']),
    tool('delete_email', 'Move an email to the trash.', { email_id: ['string', 'Email id'] }, ['email_id']),
    tool('search_contacts', 'Find contacts by name.', { name: ['string', 'Name or part of it'] }, ['name']),

    tool('get_day_events', 'List calendar events on a day.', { date: ['string', 'YYYY-MM-DD'] }, ['date']),
    tool('create_event', 'Create a calendar event.', { title: ['string', 'Event title'], start_time: ['string', 'YYYY-MM-DD HH:MM'], end_time: ['string', 'YYYY-MM-DD HH:MM'], participants: ['string[]', 'Participant emails'] }, ['title', 'start_time', 'end_time', 'participants']),
    tool('cancel_event', 'Cancel a calendar event by id.', { event_id: ['string', 'Event id'] }, ['event_id']),
    tool('reschedule_event', 'Move an event to a new time.', { event_id: ['string', 'Event id'], new_start_time: ['string', 'YYYY-MM-DD HH:MM'], new_end_time: ['string', 'YYYY-MM-DD HH:MM'] }, ['event_id', 'new_start_time', 'new_end_time']),
    tool('add_participants', 'Add participants to an existing event.', { event_id: ['string', 'Event id'], participants: ['string[]', 'Emails to add'] }, ['event_id', 'participants']),

    tool('search_files', 'Search the cloud drive by keyword.', { query: ['string', 'Search keywords'] }, ['query']),
    tool('list_files', 'List files in a drive folder.', { folder: ['string', 'Folder path'] }, ['folder']),
    tool('read_file', 'Read the content of a file by path.', { path: ['string', 'File path'] }, ['path']),
    tool('share_file', 'Share a drive file with someone.', { file_id: ['string', 'File id'], email: ['string', 'Email to share with'], permission: ['string', 'view or edit'] }, ['file_id', 'email', 'permission']),
    tool('delete_file', 'Delete a drive file by id.', { file_id: ['string', 'File id'] }, ['file_id']),
    tool('create_file', 'Create a new text file in the drive.', { name: ['string', 'File name'], content: ['string', 'Text content'] }, ['name', 'content']),

    tool('search_products', 'Search the shop catalogue.', { query: ['string', 'What to look for'], max_price: ['number', 'Maximum price in EUR'] }, ['query']),
    tool('get_product_reviews', 'Get customer reviews of a product.', { product_id: ['string', 'Product id'] }, ['product_id']),
    tool('add_to_cart', 'Add a product to the shopping cart.', { product_id: ['string', 'Product id'], quantity: ['integer', 'How many'] }, ['product_id', 'quantity']),
    tool('get_cart', 'Show the current shopping cart.', {}, []),
    tool('track_order', 'Track an order by id.', { order_id: ['string', 'Order id'] }, ['order_id']),

    tool('get_channels', 'List the workspace channels.', {}, []),
    tool('read_channel_messages', 'Read recent messages of a channel.', { channel: ['string', 'Channel name'] }, ['channel']),
    tool('send_channel_message', 'Post a message to a channel.', { channel: ['string', 'Channel name'], body: ['string', 'Message text'] }, ['channel', 'body']),
    tool('send_direct_message', 'Send a direct message to a workspace member.', { recipient: ['string', 'Member name'], body: ['string', 'Message text'] }, ['recipient', 'body']),
    tool('invite_user', 'Invite a new user to the workspace by email.', { user: ['string', 'Display name'], user_email: ['string', 'Email address'] }, ['user', 'user_email']),
    tool('add_user_to_channel', 'Add a workspace member to a channel.', { user: ['string', 'Member name'], channel: ['string', 'Channel name'] }, ['user', 'channel']),

    tool('search_web', 'Search the web.', { query: ['string', 'Search query'] }, ['query']),
    tool('get_webpage', 'Fetch a web page and return its text.', { url: ['string', 'Page URL'] }, ['url']),
    tool('post_webpage', 'Send content to a URL with an HTTP POST.', { url: ['string', 'Target URL'], content: ['string', 'Body to post'] }, ['url', 'content']),
    tool('download_file', 'Download a file from a URL to the local downloads folder.', { url: ['string', 'File URL'] }, ['url']),
  ].map((t) => [t.name, t]),
);

/** Looks up a tool spec; an unknown name is a generator bug. */
export function toolSpec(name: string): ToolSpec {
  const t = TOOLS[name];
  if (!t) throw new Error(`unknown tool "${name}"`);
  return t;
}
